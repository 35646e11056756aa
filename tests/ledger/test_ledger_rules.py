"""The durability rules on a live connection, write transactions, search and telemetry."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger import Ledger, ReadOnlyLedgerError
from ledger.schema import APPLICATION_ID
from ledger.store import TELEMETRY_COLUMNS
from session import models as m

CONTRACT = m.Contract(workloads=[m.Workload(name="w", command="true")])


def _session(sid: str = "s1") -> m.Session:
    return m.Session(id=sid, title="t", repo="/r", contract=CONTRACT)


@pytest.fixture
def ledger(tmp_path: Path) -> Any:
    with Ledger.open(tmp_path / "l.db") as led:
        yield led


def test_every_connection_follows_the_durability_rules(ledger: Ledger) -> None:
    conn = ledger.db.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 30_000
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    # a second opening of the same file follows them too
    with Ledger.open(ledger.path) as again:
        c2 = again.db.conn
        assert c2.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert c2.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert c2.execute("PRAGMA busy_timeout").fetchone()[0] >= 30_000


def test_read_only_connections_follow_them_too(ledger: Ledger) -> None:
    ledger.put(_session())
    with Ledger.open(ledger.path, readonly=True) as ro:
        c = ro.db.conn
        assert c.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert c.execute("PRAGMA busy_timeout").fetchone()[0] >= 30_000
        with pytest.raises(ReadOnlyLedgerError, match="read-only"):
            ro.put(_session("s2"))
        assert [s.id for s in ro.list(m.Session)] == ["s1"]


def test_write_takes_the_lock_at_begin(ledger: Ledger) -> None:
    """BEGIN IMMEDIATE: while one write is open, another writer cannot even begin."""
    other = sqlite3.connect(ledger.path, timeout=0.05, isolation_level=None)
    try:
        with ledger.write(), pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
    finally:
        other.close()


def test_foreign_keys_are_enforced(ledger: Ledger) -> None:
    with pytest.raises(sqlite3.IntegrityError):
        ledger.put(m.Hypothesis(session_id="nobody", title="t"))
    assert ledger.list(m.Hypothesis) == []


def test_a_failed_write_leaves_nothing(ledger: Ledger) -> None:
    with pytest.raises(RuntimeError), ledger.write():
        ledger.put(_session("a"))
        ledger.insert_samples([("a", None, 1, "host", *([None] * 16))])
        raise RuntimeError("boom")
    assert ledger.list(m.Session) == [] and ledger.samples(session_id="a") == []


def test_nested_writes_are_savepoints(ledger: Ledger) -> None:
    with ledger.write():
        ledger.put(_session("outer"))
        with pytest.raises(RuntimeError), ledger.write():
            ledger.put(_session("inner"))
            raise RuntimeError("inner fails")
    assert [s.id for s in ledger.list(m.Session)] == ["outer"]


def test_threads_sharing_a_ledger_never_share_a_transaction(ledger: Ledger) -> None:
    """A sampler thread's batch must not land inside (and roll back with) the main
    thread's transaction."""
    ledger.put(_session())
    inside, written = threading.Event(), threading.Event()

    def sampler() -> None:
        inside.wait(10)
        ledger.insert_samples([("s1", None, 7, "host", *([None] * 16))])
        written.set()

    t = threading.Thread(target=sampler)
    t.start()
    with pytest.raises(RuntimeError), ledger.write():
        ledger.put(_session("doomed"))
        inside.set()
        written.wait(0.5)  # the sampler waits for this transaction instead of joining it
        assert not written.is_set()
        raise RuntimeError("roll back")
    t.join(10)
    assert written.is_set()
    assert [s.t_us for s in ledger.samples(session_id="s1")] == [7]
    assert ledger.get(m.Session, "doomed") is None


# ---------------------------------------------------------------------------- telemetry


def test_samples_insert_in_one_transaction_per_batch(ledger: Ledger) -> None:
    statements: list[str] = []
    ledger.db.conn.set_trace_callback(statements.append)
    values = (1980.0, 2619.0, 4, 612.5, 700.0, 51.0, 98.0, 40.0, 12 << 30, 1.0, 2.0, 0, 12.0,
              2 << 30, 0.5)  # fmt: skip
    batch = [("s", "r1", t, "nvml", 0, *values) for t in range(10_000)]
    models = [m.TelemetrySample(session_id="s", run_id="r2", t_us=t, power_w=2.5) for t in range(3)]
    assert ledger.insert_samples(batch + models) == 10_003  # type: ignore[operator]
    ledger.db.conn.set_trace_callback(None)
    assert [s for s in statements if s.startswith(("BEGIN", "COMMIT"))] == [
        "BEGIN IMMEDIATE",
        "COMMIT",
    ]
    assert len(ledger.samples(run_id="r1")) == 10_000
    back = ledger.samples(run_id="r2")
    assert back == models
    assert len(TELEMETRY_COLUMNS) + 1 == len(batch[0])
    assert ledger.insert_samples([]) == 0


# ---------------------------------------------------------------------------- search


def _hyp(title: str, mechanism: str, **kw: Any) -> m.Hypothesis:
    return m.Hypothesis(session_id="s1", title=title, mechanism=mechanism, **kw)


def test_search_ranks_and_filters(ledger: Ledger) -> None:
    ledger.put(_session())
    launch = _hyp("fuse the softmax", "kernel launch overhead dominates small batches")
    memory = _hyp("pinned memory", "host to device copies stall the stream")
    other = _hyp("bigger tiles", "launch configuration leaves SMs idle",
                 status=m.HypothesisStatus.REJECTED)  # fmt: skip
    ledger.put(launch, memory, other)
    found = ledger.search_hypotheses("launch overhead")
    assert [h.id for h in found] == [launch.id, other.id]
    assert ledger.search_hypotheses("launch", status=m.HypothesisStatus.REJECTED) == [other]
    assert ledger.search_hypotheses("nothing like this") == []
    # FTS syntax in the query is taken as words, never as an error
    for query in ['"', "launch*", "NEAR(a b)", "a OR", "-launch", "'; DROP TABLE x", ""]:
        ledger.search_hypotheses(query)
    # edits are re-indexed: the old words no longer find it
    memory.mechanism = "allocator fragmentation"
    ledger.put(memory)
    assert ledger.search_hypotheses("stall stream") == []
    assert ledger.search_hypotheses("fragmentation") == [memory]


WORD = st.text(alphabet=st.characters(categories=["Lu", "Ll", "Lo", "Nd"]), min_size=3, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(word=WORD, noise=st.text(max_size=60), field=st.sampled_from(
    ["symptom", "mechanism", "predicted_effect", "falsifier", "confounders"]))  # fmt: skip
@pytest.mark.slow
def test_search_finds_any_word_of_any_text_field(
    tmp_path_factory: Any, word: str, noise: str, field: str
) -> None:
    with Ledger.open(tmp_path_factory.mktemp("fts") / "l.db") as ledger:
        ledger.put(_session())
        target = m.Hypothesis(session_id="s1", title="t", **{field: f"{noise} {word} {noise}"})
        decoy = m.Hypothesis(session_id="s1", title="decoy", mechanism="unrelated words")
        ledger.put(decoy, target)
        assert target in ledger.search_hypotheses(f"about {word}?")


def test_opening_an_up_to_date_ledger_does_not_wait_for_writers(ledger: Ledger) -> None:
    """Opening (the app, a CLI command) while another process holds the write lock."""
    import time

    other = sqlite3.connect(ledger.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        t0 = time.monotonic()
        with Ledger.open(ledger.path) as second:
            assert not second.readonly
            assert second.list(m.Session) == []
        assert time.monotonic() - t0 < 5
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_variant_by_name_id_or_prefix(ledger: Ledger) -> None:
    from ledger import LedgerError

    ledger.put(_session())
    snap = m.Snapshot(commit="0" * 40, ref="refs/gpuopt/snapshots/x")
    a = m.Variant(id="abc111", session_id="s1", name="fused", snapshot=snap)
    b = m.Variant(id="abc222", session_id="s1", name="abc1", snapshot=snap)
    ledger.put(a, b)
    assert ledger.variant("s1", "fused") == a
    assert ledger.variant("s1", "abc222") == b
    assert ledger.variant("s1", "abc2") == b
    assert ledger.variant("s1", "abc1") == b  # a name wins over an id prefix
    with pytest.raises(LedgerError, match="several"):
        ledger.variant("s1", "abc")
    with pytest.raises(LedgerError, match="no variant"):
        ledger.variant("s1", "zzz")


def test_one_put_of_mixed_rows_stores_each_in_order_and_counts_each_version(
    ledger: Ledger,
) -> None:
    """put() sends a stretch of rows of one table as one statement executed many times:
    a parent before its children still lands first (foreign keys), a row given twice in
    one call is one row at version 2, and a failing row takes the whole call with it."""
    s = _session()
    idea = m.Hypothesis(session_id=s.id, title="fuse")
    runs = [m.Run(session_id=s.id, arm="baseline", workload="w", block=b) for b in range(3)]
    ledger.put(s, runs[0], runs[1], idea, runs[2], idea, runs[0])
    conn = ledger.db.conn
    versions = dict(conn.execute("SELECT id, version FROM runs").fetchall())
    assert versions == {runs[0].id: 2, runs[1].id: 1, runs[2].id: 1}
    assert conn.execute("SELECT version FROM hypotheses").fetchall() == [(2,)]
    orphan = m.Run(session_id="nobody", arm="baseline", workload="w", block=9)
    with pytest.raises(sqlite3.IntegrityError):
        ledger.put(runs[1], orphan)
    later = m.Hypothesis(session_id=s.id, title="tile")
    with pytest.raises(sqlite3.IntegrityError):  # after a stretch of another table ran
        ledger.put(later, idea, orphan)
    assert dict(conn.execute("SELECT id, version FROM runs").fetchall()) == versions
    assert conn.execute("SELECT id, version FROM hypotheses").fetchall() == [(idea.id, 2)]
