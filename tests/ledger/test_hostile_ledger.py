"""A ledger someone else prepared: a trigger of its own fires on our writes, and the WAL or
shared-memory file of another database is never taken for a ledger or an output."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from ledger import Ledger
from ledger.db import TRUSTED_TRIGGERS, LedgerError, ReadOnlyLedgerError, refuse_overwrite
from session import models as m

CONTRACT = m.Contract(workloads=[m.Workload(name="w", command="true")])


def _ledger_with_runs(path: Path) -> None:
    with Ledger.open(path) as ledger:
        ledger.put(m.Session(id="s1", title="t", repo="/r", contract=CONTRACT))
        ledger.put(m.Hypothesis(id="h1", session_id="s1", title="kept"))


def test_the_trusted_triggers_are_exactly_a_fresh_ledgers(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l.db") as ledger:
        rows = ledger.db.conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
        ).fetchall()
    assert dict(rows) == TRUSTED_TRIGGERS


@pytest.mark.parametrize("how", ["new trigger", "changed trigger"])
def test_a_trigger_gpuopt_did_not_make_keeps_the_ledger_read_only(tmp_path: Path, how: str) -> None:
    path = tmp_path / "l.db"
    _ledger_with_runs(path)
    raw = sqlite3.connect(path)
    if how == "changed trigger":
        raw.execute("DROP TRIGGER hypotheses_ai")
        raw.execute(
            "CREATE TRIGGER hypotheses_ai AFTER INSERT ON hypotheses "
            "BEGIN DELETE FROM sessions WHERE id != new.session_id; END"
        )
    else:
        raw.execute(
            "CREATE TRIGGER evil AFTER INSERT ON hypotheses BEGIN DELETE FROM hypotheses; END"
        )
    raw.commit()
    raw.close()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with Ledger.open(path) as ledger:  # review stays possible: reading fires no trigger
        assert ledger.readonly
        assert [h.title for h in ledger.list(m.Hypothesis)] == ["kept"]
        with pytest.raises(ReadOnlyLedgerError, match=r"trigger.*gpuopt did not make"):
            ledger.put(m.Hypothesis(id="h2", session_id="s1", title="innocent"))
        assert any("trigger" in p for p in ledger.check())
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_the_side_files_of_another_database_are_refused(tmp_path: Path, suffix: str) -> None:
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    side = other.with_name("other.db" + suffix)
    side.write_bytes(b"")
    with pytest.raises(LedgerError, match="belongs to the SQLite database"):
        refuse_overwrite(side, None)
    with pytest.raises(LedgerError, match="belongs to the SQLite database"):
        Ledger.open(side)
    assert side.read_bytes() == b""
