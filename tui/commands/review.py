"""`gpuopt review [LEDGER]`: browse any ledger read-only."""

from __future__ import annotations

import argparse

# Lazy imports, on purpose: `gpuopt --help` imports this module, and must not pay for
# textual, pydantic or the engine (tests/cli/test_cli_imports.py). Each handler imports
# what it uses.


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
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from tui.cli import UsageError

    path = args.ledger_file or args.ledger
    if path is not None and not Path(path).expanduser().is_file():
        raise UsageError(f"{path}: no such ledger file")
    if not sys.stdin.isatty() or not sys.stderr.isatty():
        raise UsageError(
            "review is full-screen and needs a terminal; "
            "use `gpuopt sessions` or `gpuopt export` in scripts"
        )
    from session.ledger_access import Ledger
    from tui.app import GpuoptApp

    with Ledger.open(path, readonly=True) as ledger:  # fails early and clearly on a bad file
        resolved = ledger.path
    app = GpuoptApp(
        resolved, review=True, readonly=True, telemetry="off", export_dir=args.export_dir
    )
    app.run()
    return app.return_code or 0
