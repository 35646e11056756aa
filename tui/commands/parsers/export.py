"""The parser of `gpuopt export`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.export, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="write a session's decision record (markdown or JSON)")
    p.add_argument("session", metavar="SESSION", nargs="?", help="session id or a unique prefix")
    p.add_argument(
        "--format",
        choices=("md", "json", "csv"),
        default="md",
        help="md: the decision record to read (default); json: every record, for tools; "
        "csv: every raw sample (one row per run)",
    )
    p.add_argument(
        "--json", dest="format", action="store_const", const="json", help="--format json"
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE instead of stdout (an earlier record of this session there is "
        "replaced; any other file only with --force)",
    )
    p.add_argument(
        "--force", action="store_true", help="with -o: replace FILE even if it is not a record"
    )
    p.add_argument(
        "--schema",
        action="store_true",
        help="print the JSON Schema of --format json instead (no session, no ledger)",
    )
    p.set_defaults(handler="tui.commands.export:run")
