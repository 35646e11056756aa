"""The parser of `gpuopt review`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.review, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse

from tui.commands.parsers.numbers import number, within


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
    p.set_defaults(handler="tui.commands.review:run")
