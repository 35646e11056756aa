"""Helpers for tests that run `gpuopt` as real processes on a real repository.

A session whose workload is quick while the flag file is absent (so the baseline records
fast) and, once the flag exists, spawns leftovers (a background child and a `setsid`
grandchild), writes their pids and its own to a file, and sleeps: a run long enough to be
signalled in the middle, with descendants that must not outlive it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tui.cli import main

ROOT = Path(__file__).resolve().parents[2]


def workload(flag: Path, pids: Path, sleep_s: float = 1.0) -> str:
    return (
        f"if [ -e {flag} ]; then "
        f"setsid sleep 300 & echo $! >> {pids}; "
        f"sleep 300 & echo $! >> {pids}; "
        f"echo $$ >> {pids}; sleep {sleep_s}; fi; cat value.txt"
    )


def gpuopt_in_process(ledger: Path, *args: str) -> int:
    return main(["--ledger", str(ledger), *args])


def make_session(make_repo, tmp_path: Path, command: str, *extra: str) -> tuple[Path, Path, str]:
    """(repo, ledger, session id) with a reproducible baseline and one A/A variant."""
    import contextlib
    import io

    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "l.db"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = gpuopt_in_process(
            ledger, "new", "--repo", str(repo), "--title", "t", "--workload",
            f"read={command}", "--metric", "regex:(?P<value>[0-9.]+)", *extra,
        )  # fmt: skip
    assert code == 0
    sid = out.getvalue().strip()
    with contextlib.redirect_stdout(io.StringIO()):
        assert gpuopt_in_process(ledger, "baseline", sid, "--runs", "8", "--no-telemetry") == 0
        assert gpuopt_in_process(ledger, "variant", "add", sid, "--name", "same", "--ref", "HEAD",
                                 "--probe") == 0  # fmt: skip
    return repo, ledger, sid


def env() -> dict[str, str]:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def spawn(ledger: Path, *args: str, start_at: float | None = None) -> subprocess.Popen[str]:
    """`gpuopt --ledger LEDGER ARGS...` as a process of its own (optionally held until a
    wall-clock time, so that several start at once)."""
    code = (
        "import sys, time\n"
        "from tui.cli import main\n"
        f"time.sleep(max(0.0, {start_at or 0.0} - time.time()))\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, "--ledger", str(ledger), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=ROOT,
    )  # fmt: skip


def read_pids(path: Path) -> list[int]:
    try:
        return [int(line) for line in path.read_text().split()]
    except FileNotFoundError:
        return []


def wait_for(predicate, timeout_s: float = 20.0, what: str = "a condition") -> None:
    end = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def alive(pid: int) -> bool:
    """Running (a zombie, which only waits for its parent to read its status, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def still_alive(pids: list[int], timeout_s: float = 5.0) -> list[int]:
    """The pids still running after up to timeout_s."""
    end = time.monotonic() + timeout_s
    while True:
        left = [p for p in pids if alive(p)]
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.02)


def kill_all(pids: list[int]) -> None:
    """Leave no process behind whatever a test found."""
    import signal

    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
