"""Real processes against one ledger file: kill -9 mid-write, and four writers at once."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ledger import Ledger
from session import models as m

ROOT = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("ledger_writer.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
CHILDREN, SAMPLES = 20, 300


def _writer(path: Path, tag: str, count: int, start_at: float, *extra: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(path), tag, str(count), str(start_at),
         *map(str, extra)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip


def _assert_whole(path: Path, committed: set[str]) -> int:
    """Every transaction is all there or not at all; every reported commit is there."""
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        raw.close()
    with Ledger.open(path) as ledger:
        assert ledger.check() == []
        sessions = {s.id for s in ledger.list(m.Session)}
        markers = {e.session_id for e in ledger.list(m.Evidence) if e.title == "marker"}
        assert sessions == markers, "a session without its marker, or the other way"
        assert committed <= sessions, f"reported committed but lost: {committed - sessions}"
        per_session = {
            r["session_id"]: r["n"]
            for r in ledger.query(
                "SELECT session_id, COUNT(*) AS n FROM hypotheses GROUP BY session_id"
            )
        }
        samples = {
            r["session_id"]: r["n"]
            for r in ledger.query(
                "SELECT session_id, COUNT(*) AS n FROM telemetry GROUP BY session_id"
            )
        }
        for sid in sessions:
            assert per_session.get(sid) == CHILDREN, (sid, per_session.get(sid))
            assert samples.get(sid) == SAMPLES, (sid, samples.get(sid))
        assert set(per_session) <= sessions and set(samples) <= sessions, "orphan rows"
        # every stored row reads back as a valid model (no half-written JSON)
        assert len(ledger.list(m.Hypothesis)) == CHILDREN * len(sessions)
        return len(sessions)


@pytest.mark.slow
def test_kill_9_at_random_moments_loses_no_committed_transaction(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    committed: set[str] = set()
    for attempt in range(10):
        proc = _writer(path, f"k{attempt}", 0, 0, CHILDREN, SAMPLES)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL
        committed |= {line.split()[1] for line in out.splitlines() if line.startswith("committed")}
        _assert_whole(path, committed)
    total = _assert_whole(path, committed)
    assert total >= len(committed) > 0, f"seed {seed}: nothing was committed before the kills"


@pytest.mark.slow
def test_four_writers_at_once_all_transactions_land(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"  # created by the writers themselves, all at once
    start_at = time.time() + 3.0
    procs = [_writer(path, f"w{n}", 500, start_at) for n in range(4)]
    results = [p.communicate(timeout=600) for p in procs]
    for proc, (out, err) in zip(procs, results, strict=True):
        assert "locked" not in err and "locked" not in out, err
        assert proc.returncode == 0, err
        assert out.count("committed") == 500
    with Ledger.open(path) as ledger:
        ids = {s.id for s in ledger.list(m.Session)}
        assert ledger.check() == []
    assert ids == {f"w{n}-{i}" for n in range(4) for i in range(500)}
