"""Opening a ledger that another connection holds open, its WAL holding pages past the
main file's end (a round or the app writing it): no damage, so no second look. The
truncation check's retry slept 0.05 + 0.1 s on every such opening (every poll of a test
waiting on a ledger state, every read of the app's)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ledger import Ledger
from ledger import db as ledger_db


def test_a_ledger_held_open_with_a_long_wal_opens_without_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ledger.db"
    with Ledger.open(path):
        pass
    held = sqlite3.connect(path)
    try:
        held.execute("PRAGMA journal_mode=WAL")
        held.execute("PRAGMA wal_autocheckpoint=0")  # the pages stay in the WAL
        held.execute("CREATE TABLE filler(x)")
        held.executemany("INSERT INTO filler VALUES (?)", [("x" * 1000,)] * 200)
        held.commit()
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as look:
            pages = look.execute("PRAGMA page_count").fetchone()[0]
            size = look.execute("PRAGMA page_size").fetchone()[0] * pages
        assert size > path.stat().st_size  # the case: the main file alone looks short
        sleeps: list[float] = []
        monkeypatch.setattr(ledger_db.time, "sleep", sleeps.append)
        for readonly in (True, False):
            with Ledger.open(path, readonly=readonly):
                pass
        assert ledger_db._header_problem(path) is None
        assert sleeps == []
    finally:
        held.close()
