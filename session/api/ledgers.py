"""What a front end reads or writes of the ledger beyond one session: it never calls the
store itself (tests/test_tui_no_store_calls.py). Front ends import it from session.api."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from session import models as m
from session.bisect import store as bisection_store


def find_session(ledger: Any, ref: str) -> m.Session:
    """The session `ref` names (an id or a unique prefix); a LedgerError otherwise."""
    found: m.Session = ledger.resolve_session(ref)
    return found


def listing_rows(ledger: Any, cut: bool = True) -> list[dict[str, Any]]:
    """Every session's listing row (id, title, repo, counts); `cut` shortens long values."""
    return list(ledger.session_rows(cut=cut))


def sessions(ledger: Any) -> list[m.Session]:
    """Every session, each validated (a row that does not read back joins `unreadable`)."""
    return list(ledger.list(m.Session))


def unreadable(ledger: Any) -> list[Any]:
    """The rows met so far that do not read back as their model (table and rowid)."""
    return list(getattr(ledger, "unreadable", ()))


def unreadable_rows(ledger: Any) -> list[Any]:
    """Every row of the file checked against its model (sqlite3.DatabaseError: damaged)."""
    return list(ledger.validate_rows())


def ledger_problems(ledger: Any) -> list[str]:
    """The file's integrity and schema problems (empty: sound)."""
    return list(ledger.check())


def ledger_counts(ledger: Any) -> dict[str, int | None]:
    return dict(ledger.counts())


def backup_ledger(ledger: Any, target: str | Path) -> None:
    """A consistent copy of the open ledger at `target` (a new file)."""
    ledger.backup(target)


def record_samples(ledger: Any, rows: Iterable[Any]) -> int:
    """Telemetry samples written (the app's sink while a baseline or round runs)."""
    return int(ledger.insert_samples(rows))


def bisections(ledger: Any) -> list[Any]:
    """Every bisection that reads back, newest first."""
    return list(bisection_store.list_all(ledger))


def bisection(ledger: Any, ref: str) -> Any:
    """The bisection `ref` names (an id or a unique prefix)."""
    return bisection_store.load(ledger, ref).record
