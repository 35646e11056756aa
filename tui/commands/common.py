"""Helpers shared by the command handlers: the ledger a command opens, the session it
names, JSON on stdout. A handler module, never loaded by `gpuopt --help` (the parsers
under tui/commands/parsers/ are)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from session import models as m
from session.api import Ledger, default_ledger_path, find_session, unreadable
from tui.display import json_safe, plain


def ledger_path(args: argparse.Namespace) -> Path:
    """The ledger file a command uses: --ledger, else GPUOPT_LEDGER, else the default."""
    return Path(args.ledger).expanduser() if args.ledger else default_ledger_path()


# Every ledger a command opened: rows that did not read back are named when it ends.
OPENED: list[Ledger] = []


def open_ledger(args: argparse.Namespace, readonly: bool = False) -> Ledger:
    ledger = Ledger.open(ledger_path(args), readonly=readonly)
    OPENED.append(ledger)
    return ledger


def warn_unreadable() -> None:
    """After a command: one stderr line per row it had to leave out (table and rowid), so
    a listing or an export that is short of a row says so."""
    seen: set[tuple[str, int]] = set()
    for ledger in OPENED:
        for row in unreadable(ledger):
            if (row.table, row.rowid) not in seen:
                seen.add((row.table, row.rowid))
                print(f"gpuopt: {plain(str(row), 1000)} (left out)", file=sys.stderr)
    OPENED.clear()


def session_of(ledger: Ledger, ref: str) -> m.Session:
    """The session `ref` names (an id or a unique prefix); a ledger error otherwise, which
    `tui.cli._run` says in one line (exit 2)."""
    return find_session(ledger, ref)


def print_json(obj: Any) -> None:
    """JSON on stdout, with what a terminal acts on (C1, bidi controls) as \\u escapes."""
    sys.stdout.write(json_safe(json.dumps(obj, ensure_ascii=False, indent=2, default=str)))
    sys.stdout.write("\n")
