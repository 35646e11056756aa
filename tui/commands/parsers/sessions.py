"""The parser of `gpuopt sessions`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.sessions, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse

# The tab-separated columns, in order (said in --help too).
PLAIN_COLUMNS = (
    "id", "title", "repo", "created_at", "baselines", "hypotheses", "variants", "rounds",
    "archived",
)  # fmt: skip


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sessions",
        help="list the sessions in the ledger",
        description="List the sessions, newest first. On a terminal a table that fits its "
        "width; otherwise one tab-separated line per session: "
        + ", ".join(PLAIN_COLUMNS)
        + " (text with tabs, newlines or control characters escaped).",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--all", action="store_true", help="archived sessions too")
    p.set_defaults(handler="tui.commands.sessions:run")
