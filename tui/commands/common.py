"""Helpers shared by the command handlers: light (the standard library only at import),
so a command module imports it at its head; `gpuopt --help` loads no command module."""

from __future__ import annotations

import argparse

# At the head only what costs `gpuopt CMD --help` no module of weight (the standard
# library, tui.commands.common); pydantic, rich and the engine are imported inside the
# handlers, so help never pays for them (tests/cli/test_cli_imports.py).
import json
import sys
from pathlib import Path
from typing import Any


def ledger_path(args: argparse.Namespace) -> Any:
    """The ledger file a command uses: --ledger, else GPUOPT_LEDGER, else the default."""
    from session.api import default_ledger_path

    return Path(args.ledger).expanduser() if args.ledger else default_ledger_path()


# Every ledger a command opened: rows that did not read back are named when it ends.
OPENED: list[Any] = []


def open_ledger(args: argparse.Namespace, readonly: bool = False) -> Any:
    from session.api import Ledger

    ledger = Ledger.open(ledger_path(args), readonly=readonly)
    OPENED.append(ledger)
    return ledger


def warn_unreadable() -> None:
    """After a command: one stderr line per row it had to leave out (table and rowid), so
    a listing or an export that is short of a row says so."""
    from session.api import unreadable
    from tui.display import plain

    seen: set[tuple[str, int]] = set()
    for ledger in OPENED:
        for row in unreadable(ledger):
            if (row.table, row.rowid) not in seen:
                seen.add((row.table, row.rowid))
                print(f"gpuopt: {plain(str(row), 1000)} (left out)", file=sys.stderr)
    OPENED.clear()


def session_of(ledger: Any, ref: str) -> Any:
    """The session `ref` names (an id or a unique prefix); a ledger error otherwise, which
    `tui.cli._run` says in one line (exit 2)."""
    from session.api import find_session

    return find_session(ledger, ref)


def print_json(obj: Any) -> None:
    """JSON on stdout, with what a terminal acts on (C1, bidi controls) as \\u escapes."""
    from tui.display import json_safe

    sys.stdout.write(json_safe(json.dumps(obj, ensure_ascii=False, indent=2, default=str)))
    sys.stdout.write("\n")
