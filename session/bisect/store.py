"""A bisection's record in the ledger, read and written whole, checked against the
version that was read (ledger.bisections holds the SQL)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from ledger import bisections as rows
from session.bisect.models import Bisection
from session.errors import BadInput

__all__ = ["Saved", "list_all", "load", "save"]


@dataclass
class Saved:
    record: Bisection
    version: int | None  # None until first written


def save(ledger: Any, saved: Saved) -> None:
    rec = saved.record
    row = {
        "id": rec.id,
        "session_id": rec.session_id,
        "repo": rec.repo,
        "good": rec.good,
        "bad": rec.bad,
        "status": rec.status.value,
        "created_at": rec.created_at.isoformat(),
        "updated_at": rec.updated_at.isoformat(),
    }
    saved.version = rows.save(ledger, row, rec.model_dump_json(), saved.version)


def load(ledger: Any, ref: str) -> Saved:
    found = rows.find(ledger, ref.strip()) if ref.strip() else []
    if not found:
        raise BadInput(f"no bisection {ref!r} in {ledger.path}")
    if len(found) > 1:
        raise BadInput(f"{ref!r} begins {len(found)} bisections' ids: give more of it")
    data, version = found[0]
    return Saved(Bisection.model_validate_json(data), version)


def list_all(ledger: Any, session_id: str | None = None) -> list[Bisection]:
    """Every bisection that reads back, newest first (a row that does not is left out, and
    a table that cannot be read gives none: the sessions of a damaged ledger still show)."""
    out = []
    try:
        found = rows.list_rows(ledger, session_id)
    except sqlite3.DatabaseError:
        return []
    for data, _ in found:
        try:
            out.append(Bisection.model_validate_json(data))
        except ValueError:
            continue
    return out
