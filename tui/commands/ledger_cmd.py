"""`gpuopt ledger check|backup|path`: the health of the ledger file."""

from __future__ import annotations

import argparse

# Lazy imports, on purpose: `gpuopt --help` imports this module, and must not pay for
# textual, pydantic or the engine (tests/cli/test_cli_imports.py). Each handler imports
# what it uses.


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ledger", help="check, back up or locate the ledger file")
    lsub = p.add_subparsers(dest="ledger_command", metavar="ACTION", required=True)
    c = lsub.add_parser("check", help="integrity, foreign-key and row check, row counts")
    c.add_argument("--json", action="store_true", help="print JSON")
    c.set_defaults(handler=check)
    b = lsub.add_parser("backup", help="write a consistent copy (VACUUM INTO)")
    b.add_argument("target", metavar="FILE", help="the new file to write (must not exist)")
    b.set_defaults(handler=backup)
    w = lsub.add_parser("path", help="print the ledger path in use")
    w.set_defaults(handler=path)


def check(args: argparse.Namespace) -> int:
    import sqlite3

    from tui.commands.common import open_ledger, print_json
    from tui.display import plain

    with open_ledger(args, readonly=True) as ledger:
        problems = ledger.check()
        # Rows the models cannot read back (bad JSON, wrong types, unknown fields).
        try:
            problems += [str(row) for row in ledger.validate_rows()]
        except sqlite3.DatabaseError as exc:  # damage the integrity check has named already
            problems.append(f"row check stopped: {exc}")
        counts = ledger.counts()
        report = {
            "path": str(ledger.path),
            "ok": not problems,
            "problems": problems,
            "newer": ledger.newer,
            "counts": counts,
        }
    if args.json:
        print_json(report)
    else:
        state = "ok" if not problems else f"{len(problems)} problem(s)"
        print(f"{plain(report['path'])}: {state}")
        if ledger.newer:
            print("written by a newer gpuopt: opened read-only")
        for p in problems:
            print(f"  {plain(p)}")
        print("  " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0 if not problems else 1


def backup(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tui.cli import UsageError
    from tui.commands.common import open_ledger

    target = Path(args.target)
    if target.exists():
        raise UsageError(f"{target}: already exists; choose a new file")
    with open_ledger(args, readonly=True) as ledger:
        ledger.backup(target)
    print(target)
    return 0


def path(args: argparse.Namespace) -> int:
    from tui.commands.common import ledger_path

    print(ledger_path(args))
    return 0
