"""`gpuopt open SESSION` (and `gpuopt` with no command): the full-screen app."""

from __future__ import annotations

import argparse
import sys

from session.api import BadInput as UsageError
from tui.app import GpuoptApp
from tui.commands.common import open_ledger, session_of


def open_app(args: argparse.Namespace) -> int:
    """Open the app: on SESSION if given, else the session picker of the ledger."""
    if not sys.stdin.isatty() or not sys.stderr.isatty():
        raise UsageError(
            "the full-screen app needs a terminal; use the subcommands (gpuopt --help) in scripts"
        )
    session_id = None
    ref = getattr(args, "session", None)
    with open_ledger(args) as ledger:
        path = ledger.path
        readonly = ledger.readonly
        if ref:
            session_id = session_of(ledger, ref).id

    app = GpuoptApp(
        path, session_id=session_id, readonly=readonly, telemetry=getattr(args, "telemetry", "live")
    )
    app.run()
    return app.return_code or 0
