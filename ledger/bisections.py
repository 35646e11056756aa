"""Rows of the `bisections` table (migration m003_bisections): a bisection's record is
its JSON in `data`, with the columns listings filter on; every write checks the version
that was read, so two processes resuming the same bisection cannot overwrite each other."""

from __future__ import annotations

from typing import Any

from ledger.db import LedgerError
from ledger.store import Ledger

__all__ = ["BisectionChangedError", "find", "list_rows", "save"]

_COLUMNS = ("id", "session_id", "repo", "good", "bad", "status", "created_at", "updated_at")


class BisectionChangedError(LedgerError):
    """The row was written by someone else since it was read."""


def save(ledger: Ledger, row: dict[str, Any], data: str, version: int | None) -> int:
    """Insert the row (version None) or update it if it is still at `version`; the new
    version."""
    values = {c: row[c] for c in _COLUMNS}
    with ledger.write() as db:
        conn = db.conn
        found = conn.execute("SELECT version FROM bisections WHERE id = ?", [row["id"]]).fetchone()
        if (version is None) != (found is None):
            raise BisectionChangedError(f"bisection {row['id']}: stored by another process")
        if found is not None and found[0] != version:
            raise BisectionChangedError(
                f"bisection {row['id']} was changed by another process since it was read "
                f"(version {found[0]}, not {version}): nothing was written"
            )
        if found is None:
            cols = ", ".join((*values, "data"))
            marks = ", ".join("?" * (len(values) + 1))
            conn.execute(
                f"INSERT INTO bisections ({cols}) VALUES ({marks})", [*values.values(), data]
            )
            return 1
        sets = ", ".join(f"{c} = ?" for c in values if c != "id")
        conn.execute(
            f"UPDATE bisections SET {sets}, data = ?, version = version + 1 WHERE id = ?",
            [*(v for c, v in values.items() if c != "id"), data, row["id"]],
        )
        return int(found[0]) + 1


def find(ledger: Ledger, ref: str) -> list[tuple[str, int]]:
    """(data, version) of the bisection whose id is `ref`, else of those it begins."""
    if not _has_table(ledger):
        return []
    rows = ledger.query(
        "SELECT id, data, version FROM bisections WHERE id LIKE ? ESCAPE '\\' ORDER BY created_at",
        [_like_prefix(ref)],
    )
    exact = [r for r in rows if r["id"] == ref]
    return [(r["data"], r["version"]) for r in (exact or rows)]


def list_rows(ledger: Ledger, session_id: str | None = None) -> list[tuple[str, int]]:
    """Every bisection (of one session, when given), newest first."""
    if not _has_table(ledger):
        return []
    sql = "SELECT data, version FROM bisections"
    params: list[Any] = []
    if session_id is not None:
        sql += " WHERE session_id = ?"
        params.append(session_id)
    rows = ledger.query(sql + " ORDER BY created_at DESC, rowid DESC", params)
    return [(r["data"], r["version"]) for r in rows]


def _has_table(ledger: Ledger) -> bool:
    """A ledger of an older gpuopt opened read-only has no such table."""
    return bool(
        ledger.query(
            "SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = ?", ["bisections"]
        )
    )


def _like_prefix(ref: str) -> str:
    return ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
