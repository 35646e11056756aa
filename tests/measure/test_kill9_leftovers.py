"""kill -9 of gpuopt leaves nothing of its runs (issue 25, item 3): not a child that
cleared its environment (`env -i`) in the run's group, nor `setsid`, double-forked or
`nohup` ones; and when the guard died with it, the next start's sweep ends them by their
recorded identity (pid and start time), never by name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from measure import orphans

ROOT = Path(__file__).resolve().parents[2]
GUARDED = """
import sys
from measure.runner import run_command
run_command(sys.argv[1], sys.argv[2])
"""
# Each leftover writes its pid; none keeps gpuopt's marks (env -i clears them).
LEFTOVERS = (
    "env -i /bin/sleep 300 & echo $! >> {f}; "  # in the run's group, no marks
    "env -i setsid /bin/sleep 300 & echo $! >> {f}; "  # a session of its own, no marks
    "env -i /bin/sh -c '/bin/sh -c \"/bin/sleep 300 & echo \\$! >> {f}\" &'; "  # double fork
    "nohup env -i /bin/sleep 300 > /dev/null 2>&1 & echo $! >> {f}; "  # nohup
    "env -i setsid /bin/sh -c '/bin/sleep 300 & echo $! >> {f}; exec /bin/sleep 300' & "
    "echo $! >> {f}; "  # a setsid shell and its child
)
COUNT = 6


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _wait_for(check, what: str, within_s: float = 60.0):  # type: ignore[no-untyped-def]
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"never: {what}")


def _start(tmp_path: Path) -> tuple[subprocess.Popen[bytes], list[int], Path]:
    """A gpuopt-like process in a run; returns it, the leftovers' pids, its guard's file."""
    f = tmp_path / "pids"
    procs = tmp_path / "procs"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUOPT_PROCS_DIR": str(procs)}
    proc = subprocess.Popen(
        [sys.executable, "-c", GUARDED, LEFTOVERS.format(f=f) + "sleep 300", str(tmp_path)],
        env=env,
    )
    pids = _wait_for(lambda: len(_pids(f)) >= COUNT and _pids(f), "the leftovers started")
    # the guard has recorded each of them (it looks ten times a second during a run)
    record = procs / orphans.owner_id(proc.pid)

    def recorded() -> bool:
        text = record.read_text() if record.exists() else ""
        return all(f"P {p} " in text for p in pids)

    _wait_for(recorded, "the guard recorded every leftover")
    return proc, pids, record


def _guard_of(pid: int) -> int:
    for tid in os.listdir(f"/proc/{pid}/task"):
        for child in Path(f"/proc/{pid}/task/{tid}/children").read_text().split():
            if b"guard" in Path(f"/proc/{child}/cmdline").read_bytes():
                return int(child)
    raise AssertionError("no guard")


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.slow
def test_kill9_of_gpuopt_leaves_no_leftover(tmp_path: Path) -> None:
    proc, pids, record = _start(tmp_path)
    try:
        assert all(_alive(p) for p in pids)
        proc.kill()
        proc.wait()
        _wait_for(lambda: not any(_alive(p) for p in pids), "every leftover ended", 10)
        _wait_for(lambda: not record.exists(), "the guard removed its record", 10)
    finally:
        _kill(pids)


@pytest.mark.slow
def test_next_start_ends_what_a_dead_gpuopt_and_guard_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc, pids, record = _start(tmp_path)
    bystander = subprocess.Popen(["env", "-i", "/bin/sleep", "300"])  # same name, not ours
    try:
        os.kill(_guard_of(proc.pid), signal.SIGKILL)
        proc.kill()
        proc.wait()
        assert all(_alive(p) for p in pids)  # nobody was left to end them
        monkeypatch.setenv("GPUOPT_PROCS_DIR", str(record.parent))
        orphans.sweep_dead_owners()  # what the next start does
        _wait_for(lambda: not any(_alive(p) for p in pids), "every leftover ended", 10)
        assert not record.exists()
        assert _alive(bystander.pid)
    finally:
        _kill(pids)
        bystander.kill()
        bystander.wait()
