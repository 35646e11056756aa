"""`gpuopt sessions` with a malformed row: the row is named (table, rowid), the rest shown."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from ledger import Ledger
from session import models as m
from tui.cli import main


def _contract() -> m.Contract:
    return m.Contract(workloads=[m.Workload(name="w", command="true")])


def test_sessions_names_an_unreadable_row_and_lists_the_rest(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    db = tmp_path / "l.db"
    good = m.Session(title="the good one", repo="/r", contract=_contract())
    bad = m.Session(title="the bad one", repo="/r", contract=_contract())
    with Ledger.open(db) as ledger:
        ledger.put(good, bad)
    with sqlite3.connect(db) as conn:  # as another program (or a bug) might leave it
        conn.execute(
            "UPDATE sessions SET data = json_set(data, '$.extra', 1) WHERE id = ?", (bad.id,)
        )
        rowid = conn.execute("SELECT rowid FROM sessions WHERE id = ?", (bad.id,)).fetchone()[0]
    code = main(["--ledger", str(db), "sessions"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "the good one" in out
    assert f"unreadable row: sessions rowid {rowid}" in out + err, out + err
    assert "Traceback" not in out + err
    code = main(["--ledger", str(db), "sessions", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and "the good one" in out
    assert f"unreadable row: sessions rowid {rowid}" in err  # JSON stays a list of sessions
