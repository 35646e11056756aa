"""`gpuopt review [LEDGER]`: browse any ledger read-only."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from session.errors import BadInput as UsageError
from tui.commands.numbers import number, within

# At the head only what costs `gpuopt CMD --help` no module of weight (the standard
# library, tui.commands.common); pydantic, rich and the engine are imported inside the
# handlers, so help never pays for them (tests/cli/test_cli_imports.py).


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "review",
        help="browse a ledger read-only: sessions, rounds, variants, rejected hypotheses",
        description=(
            "Open any ledger file read-only. Nothing is written and no stored command is run."
        ),
    )
    p.add_argument(
        "ledger_file",
        metavar="LEDGER",
        nargs="?",
        help="ledger file (default: --ledger or the default ledger)",
    )
    p.add_argument(
        "--export-dir",
        metavar="DIR",
        help="where x writes decision records (default: the user data directory)",
    )
    p.add_argument(
        "--serve",
        action="store_true",
        help="serve the read-only review to a browser (textual-serve) instead of this terminal",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="with --serve: the address to listen on (default 127.0.0.1, this machine only: "
        "from elsewhere, ssh -L 8000:localhost:8000 GPU-BOX)",
    )
    p.add_argument(
        "--port",
        type=number("port"),
        default=8000,
        help=f"with --serve: the port (8000; {within('port')})",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    path = args.ledger_file or args.ledger
    if path is not None and not Path(path).expanduser().is_file():
        raise UsageError(f"{path}: no such ledger file")
    if args.serve:
        from session.api import Ledger
        from tui.serve import serve

        with Ledger.open(path, readonly=True) as ledger:  # a bad file fails here, clearly
            resolved = ledger.path
        serve(resolved, host=args.host, port=args.port, export_dir=args.export_dir)
        return 0
    if not sys.stdin.isatty() or not sys.stderr.isatty():
        raise UsageError(
            "review is full-screen and needs a terminal; "
            "use `gpuopt sessions` or `gpuopt export` in scripts"
        )
    from session.api import Ledger
    from tui.app import GpuoptApp

    with Ledger.open(path, readonly=True) as ledger:  # fails early and clearly on a bad file
        resolved = ledger.path
    app = GpuoptApp(
        resolved, review=True, readonly=True, telemetry="off", export_dir=args.export_dir
    )
    app.run()
    return app.return_code or 0
