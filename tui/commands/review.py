"""`gpuopt review [LEDGER]`: browse any ledger read-only."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from session.api import BadInput as UsageError
from session.api import Ledger
from tui.serve import serve


def run(args: argparse.Namespace) -> int:
    path = args.ledger_file or args.ledger
    if path is not None and not Path(path).expanduser().is_file():
        raise UsageError(f"{path}: no such ledger file")
    if args.serve:
        with Ledger.open(path, readonly=True) as ledger:  # a bad file fails here, clearly
            resolved = ledger.path
        serve(resolved, host=args.host, port=args.port, export_dir=args.export_dir)
        return 0
    if not sys.stdin.isatty() or not sys.stderr.isatty():
        raise UsageError(
            "review is full-screen and needs a terminal; "
            "use `gpuopt sessions` or `gpuopt export` in scripts"
        )

    with Ledger.open(path, readonly=True) as ledger:  # fails early and clearly on a bad file
        resolved = ledger.path
    # Here, not at the head: textual (a second's import) only for the full-screen app;
    # --serve runs the web view without it.
    from tui.app import GpuoptApp

    app = GpuoptApp(
        resolved, review=True, readonly=True, telemetry="off", export_dir=args.export_dir
    )
    app.run()
    return app.return_code or 0
