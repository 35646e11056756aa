"""`Ledger.list` with a tuple reads the rows whose column holds any of its values, in one
statement (the session view reads every round's comparisons so)."""

from __future__ import annotations

import sys
from pathlib import Path

from ledger import Ledger
from session import models as m

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
from sample_session import contract


def _session(repo: str, title: str) -> m.Session:
    return m.Session(title=title, repo=repo, contract=contract())


def test_a_tuple_matches_any_of_its_values_in_one_read(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l.db") as ledger:
        a, b, c = _session("/s1", "a"), _session("/s1", "b"), _session("/s2", "c")
        ledger.put(a, b, c)
        statements: list[str] = []
        ledger._c.conn.set_trace_callback(statements.append)
        got = ledger.list(m.Session, id=(a.id, c.id), order_by="title")
        ledger._c.conn.set_trace_callback(None)
        assert [h.title for h in got] == ["a", "c"]
        assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) == 1
        assert ledger.list(m.Session, id=()) == []
        assert [h.title for h in ledger.list(m.Session, id=(b.id,), repo="/s1")] == ["b"]
        assert ledger.list(m.Session, id=(b.id,), repo="/s2") == []
