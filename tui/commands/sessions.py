"""`gpuopt sessions`: list the sessions of a ledger."""

from __future__ import annotations

import argparse

# Lazy imports, on purpose: `gpuopt --help` imports this module, and must not pay for
# textual, pydantic or the engine (tests/cli/test_cli_imports.py). Each handler imports
# what it uses.


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sessions", help="list the sessions in the ledger")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from session import models as m
    from tui.commands.common import ledger_path, open_ledger, print_json
    from tui.display import plain

    rows = []
    unreadable: list[str] = []
    path = ledger_path(args)
    if path.exists():  # no ledger yet: no sessions yet
        with open_ledger(args, readonly=True) as ledger:
            rows = ledger.session_rows(cut=not args.json)  # JSON keeps whole values
            ledger.list(m.Session)  # validates each session row: a bad one is named below
            unreadable = [str(r) for r in getattr(ledger, "unreadable", [])]
    if args.json:
        print_json(rows)
        for line in unreadable:  # stdout stays the JSON list of sessions
            print(f"gpuopt: {plain(line, 1000)}", file=sys.stderr)
        return 0
    from rich.table import Table
    from rich.text import Text

    from tui.display import console as make_console
    from tui.display import shown

    console = make_console()
    if not rows:
        where = "" if path.exists() else f"No ledger at {plain(path, None)} yet. "
        console.print(
            Text.assemble(f"{where}No sessions yet. Start one with ", ("gpuopt new", "bold"),
                          " or ", ("gpuopt demo", "bold"), "."),
            soft_wrap=True,
        )  # fmt: skip
        return 0
    table = Table(box=None, header_style="bold")
    table.add_column("id", no_wrap=True)
    for col in ("title", "repo"):
        table.add_column(col, overflow="fold")
    table.add_column("created", no_wrap=True)
    for col in ("baselines", "hypotheses", "variants", "rounds"):
        table.add_column(col, justify="right")
    for r in rows:  # stored text: shown literally, controls visible, long values cut
        table.add_row(
            shown(r["id"]), shown(r["title"], length=r["title_length"]),
            shown(r["repo"], length=r["repo_length"]),
            shown(str(r["created_at"])[:16].replace("T", " ")),
            str(r["baselines"]), str(r["hypotheses"]), str(r["variants"]), str(r["rounds"]),
        )  # fmt: skip
    console.print(table)
    for line in unreadable:  # the rest is listed; this row is named, table and rowid
        console.print(Text(plain(line, 1000), style="yellow"), soft_wrap=True)
    return 0
