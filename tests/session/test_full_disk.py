"""A ledger write that fails closes what it opened (issue 25, item 4).

The ledger lies on a small tmpfs of its own; a workload fills it (disk full) in the middle
of a real `gpuopt round` / `gpuopt baseline`. The round or baseline must end stored as
failed, with the reason, or, when nothing could be written (the workload took the room
gpuopt keeps for closing too, as a failing or read-only disk would leave nothing), the
next start closes it with the reason: nothing stays "running" without a process.
Needs root (mount); skipped elsewhere.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
BENCH = """import json, os
counter = os.environ["COUNTER"]
n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
open(counter, "w").write(str(n))
if n == int(os.environ.get("AT", "0")):
    if os.environ.get("EAT"):  # the room kept for closing is taken too
        os.unlink(os.environ["EAT"])
    if os.environ.get("FILL"):
        with open(os.environ["FILL"], "wb") as f:
            try:
                while True:
                    f.write(b"x" * 65536)
                    f.flush()
            except OSError:
                pass
print(json.dumps({"gpuopt_value": 1.0}))
"""

pytestmark = pytest.mark.slow


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "disk"
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def gpuopt(db: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(db), *args],
        env={**ENV, **env}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def _setup(tmp_path: Path, disk: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bench.py").write_text(BENCH)
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "s"]):
        subprocess.run(
            ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(repo), *cmd],
            check=True,
        )
    db = disk / "l.db"
    done = gpuopt(
        db, "new", "--repo", str(repo), "--title", "full", "--metric", "json:gpuopt_value",
        "--workload", f"w={sys.executable} bench.py",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return db, done.stdout.strip().splitlines()[-1]


def _rows(db: Path, table: str) -> list[dict]:
    raw = sqlite3.connect(db)
    try:
        return [json.loads(r[0]) for r in raw.execute(f"SELECT data FROM {table} ORDER BY rowid")]
    finally:
        raw.close()


def _ready_for_a_round(db: Path, sid: str, counter: Path) -> None:
    done = gpuopt(db, "baseline", sid, "--runs", "4", "--no-telemetry", COUNTER=str(counter))
    assert done.returncode == 0, done.stderr
    done = gpuopt(db, "variant", "add", sid, "--name", "same", "--ref", "HEAD")
    assert done.returncode == 0, done.stderr


def test_a_full_disk_mid_round_closes_it_failed(tmp_path: Path, small_disk: Path) -> None:
    db, sid = _setup(tmp_path, small_disk)
    counter = tmp_path / "count"
    _ready_for_a_round(db, sid, counter)
    counter.unlink()
    done = gpuopt(
        db, "round", sid, "--min-blocks", "10", "--max-blocks", "10", "--no-telemetry",
        COUNTER=str(counter), AT="8", FILL=str(small_disk / "fill"),
    )  # fmt: skip
    assert done.returncode == 1 and "full" in done.stderr, done.stderr
    (rnd,) = _rows(db, "rounds")  # read while the disk is still full
    assert rnd["status"] == "failed" and "full" in rnd["error"], rnd


def test_a_full_disk_mid_baseline_closes_it_failed(tmp_path: Path, small_disk: Path) -> None:
    db, sid = _setup(tmp_path, small_disk)
    done = gpuopt(
        db, "baseline", sid, "--runs", "12", "--no-telemetry",
        COUNTER=str(tmp_path / "count"), AT="6", FILL=str(small_disk / "fill"),
    )  # fmt: skip
    assert done.returncode == 1 and "full" in done.stderr, done.stderr
    (b,) = _rows(db, "baselines")
    assert b["reproducibility_detail"].startswith("failed after"), b
    assert "full" in b["reproducibility_detail"] and "measured_by" not in b


def test_what_cannot_be_closed_is_closed_by_the_next_start(
    tmp_path: Path, small_disk: Path
) -> None:
    db, sid = _setup(tmp_path, small_disk)
    counter = tmp_path / "count"
    _ready_for_a_round(db, sid, counter)
    fill, reserve = small_disk / "fill", small_disk / "l.db-reserve"
    counter.unlink()
    done = gpuopt(
        db, "round", sid, "--min-blocks", "10", "--max-blocks", "10", "--no-telemetry",
        COUNTER=str(counter), AT="8", FILL=str(fill), EAT=str(reserve),
    )  # fmt: skip
    assert done.returncode == 1 and "full" in done.stderr, done.stderr
    (rnd,) = _rows(db, "rounds")
    assert rnd["status"] == "running"  # nothing could be written: the next start's job
    fill.unlink()
    counter.unlink()
    done = gpuopt(
        db, "baseline", sid, "--runs", "12", "--no-telemetry",
        COUNTER=str(counter), AT="3", FILL=str(fill), EAT=str(reserve),
    )  # fmt: skip
    assert done.returncode == 1 and "full" in done.stderr, done.stderr
    fill.unlink()
    assert [b.get("measured_by") is not None for b in _rows(db, "baselines")] == [False, True]
    # the next start (another baseline) closes both, saying why
    done = gpuopt(db, "baseline", sid, "--runs", "4", "--no-telemetry", COUNTER=str(counter))
    assert done.returncode == 0, done.stderr
    (rnd,) = _rows(db, "rounds")
    assert rnd["status"] == "interrupted", rnd
    assert any("could not be written" in n for n in rnd["summary"]["notes"]), rnd
    stuck = _rows(db, "baselines")[1]
    assert "measured_by" not in stuck
    assert stuck["reproducibility_detail"].startswith("failed: its process"), stuck
