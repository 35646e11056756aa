"""One overlap: a real `gpuopt round` with telemetry on, while another process writes the
same ledger in a loop; then SQLite's own integrity check. Used by the ledger tests and by
`tests/benchmarks/concurrency.py`.

The round's process opens the ledger twice (its main connection and the telemetry sink's),
the situation in which a plain descriptor's close used to drop the main connection's locks.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("ledger_writer.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
BENCH = 'import json\nprint(json.dumps({"gpuopt_value": float(open("value.txt").read())}))\n'


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def prepare(where: Path) -> tuple[Path, str]:
    """A repository with a fixed-number workload, a ledger with its session, a recorded
    baseline and one variant: (ledger path, session id)."""
    from ledger import Ledger
    from session import conduct as c
    from session import models as m

    repo = where / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "bench.py").write_text(BENCH)
    (repo / "value.txt").write_text("1.0\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "start")
    path = where / "ledger.db"
    metric = m.Metric(name="value", source=m.MetricSource.JSON, pattern="gpuopt_value", unit="")
    workload = m.Workload(name="bench", command=f"{sys.executable} bench.py")
    session = m.Session(
        title="overlap", repo=str(repo), contract=m.Contract(metric=metric, workloads=[workload])
    )
    with Ledger.open(path) as ledger:
        ledger.put(session)
        c.record_baseline(ledger, session, runs=8, warmup=0)
        c.add_variant(ledger, session, "same", ref="HEAD")
    return path, session.id


def integrity_problems(path: Path) -> list[str]:
    raw = sqlite3.connect(path)
    try:
        rows = [r[0] for r in raw.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as exc:
        return [f"integrity check failed: {exc}"]
    finally:
        raw.close()
    return [r for r in rows if r != "ok"]


def overlap_once(path: Path, session_id: str, tag: str, blocks: int = 4) -> tuple[int, list[str]]:
    """Run one round while writers come and go: (round's exit code, integrity problems).

    Each writer is a short process (open, a few transactions, close), as `gpuopt
    hypothesis add` typed in a second shell is: the last close of a WAL ledger checkpoints
    and removes the WAL unless it sees another process's lock on the file.
    """
    stop = threading.Event()
    failures: list[str] = []

    def writers() -> None:
        i = 0
        while not stop.is_set():
            done = subprocess.run(
                [sys.executable, str(WRITER), str(path), f"{tag}-{i}", "2", "0", "2", "50"],
                capture_output=True, text=True, env=ENV, timeout=120,
            )  # fmt: skip
            if done.returncode != 0:
                failures.append(f"writer exited {done.returncode}: {done.stderr.strip()[-300:]}")
            i += 1

    thread = threading.Thread(target=writers)
    thread.start()
    try:
        rnd = subprocess.run(
            [sys.executable, "-m", "tui", "--ledger", str(path), "round", session_id,
             "--min-blocks", str(blocks), "--max-blocks", str(blocks)],
            capture_output=True, text=True, env=ENV, timeout=300,
        )  # fmt: skip
    finally:
        stop.set()
        thread.join()
    problems = integrity_problems(path) + failures[:3]
    if rnd.returncode != 0:
        problems.append(f"round exited {rnd.returncode}: {rnd.stderr.strip()[-300:]}")
    return rnd.returncode, problems
