"""`gpuopt open SESSION` (and `gpuopt` with no command): the full-screen app."""

from __future__ import annotations

import argparse
import sys

from session.errors import BadInput as UsageError
from tui.commands.common import open_ledger, session_of

# At the head only what costs `gpuopt CMD --help` no module of weight (the standard
# library, tui.commands.common); pydantic, rich and the engine are imported inside the
# handlers, so help never pays for them (tests/cli/test_cli_imports.py).


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("open", help="open the full-screen app on a session")
    p.add_argument("session", metavar="SESSION", nargs="?", help="session id or a unique prefix")
    p.add_argument(
        "--telemetry", choices=("live", "off"), default="live", help="the telemetry panel's feed"
    )
    p.set_defaults(handler=open_app)


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
    from tui.app import GpuoptApp

    app = GpuoptApp(
        path, session_id=session_id, readonly=readonly, telemetry=getattr(args, "telemetry", "live")
    )
    app.run()
    return app.return_code or 0
