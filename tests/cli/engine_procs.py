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


def workload(flag: Path, pids: Path, release: Path | None = None, sleep_s: float = 1.0) -> str:
    """With `release`, a flagged run lasts until that file exists (the test creates it once
    the signal it sent was seen): a run can never end before the test is ready, however
    loaded the machine. Without, it sleeps `sleep_s`."""
    hold = (
        f"n=0; while [ ! -e {release} ] && [ $n -lt 6000 ]; do sleep 0.05; n=$((n+1)); done"
        if release is not None
        else f"sleep {sleep_s}"
    )
    return (
        f"if [ -e {flag} ]; then "
        f"setsid sleep 300 & echo $! >> {pids}; "
        f"sleep 300 & echo $! >> {pids}; "
        f"echo $$ >> {pids}; {hold}; fi; cat value.txt"
    )


class Stderr:
    """A process's stderr, read line by line by a thread as it comes, so that a test
    waits on a line (an event), never on a time sized for a quiet machine."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        import threading

        assert proc.stderr is not None
        self.proc = proc
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def wait_for(self, text: str, timeout_s: float = 120.0) -> None:
        wait_for(lambda: any(text in ln for ln in self.lines) or self.proc.poll() is not None,
                 timeout_s, what=repr(text))  # fmt: skip
        assert any(text in ln for ln in self.lines), "".join(self.lines)[-3000:]

    def finish(self, timeout_s: float = 120.0) -> tuple[int, str]:
        """(the exit status, all of stderr) once the process has ended."""
        code = self.proc.wait(timeout=timeout_s)
        self._reader.join(timeout=timeout_s)
        return code, "".join(self.lines)


STOPPING = "stopping after the current run"  # gpuopt's line once it took a stop signal


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


def wait_for(predicate, timeout_s: float = 120.0, what: str = "a condition") -> None:
    """Poll for an event; the timeout only bounds a failure (a loaded machine is slow)."""
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
