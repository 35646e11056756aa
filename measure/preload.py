"""Runs of a Python script forked from a preloaded interpreter (`preload_server.py`).

`PreloadedPython` starts the server once (with the interpreter and environment the runs
would have had) and then runs one script per call, returning the same `RunResult` as
`runner.run_command`: wall time from the child's exit (watched through a pidfd), the exit
code, user and system time and peak RSS from the server's wait4, the last 64 KiB of both
streams, the metric, and a timeout that kills the child's whole process group. Only a
torch replicate whose workload asks for it (GPUOPT_PRELOAD=1) goes this way: shell
commands and launcher prefixes (srun) keep the ordinary path, and a server that cannot
start or breaks raises `PreloadError` so that the caller can fall back to it.
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from measure import gc_control, orphans, runner
from measure.errors import WorkFailed
from measure.runner import RunResult

SERVER = Path(__file__).resolve().with_name("preload_server.py")
START_TIMEOUT_S = 300.0  # importing torch on a cold file cache can take a while
ANSWER_TIMEOUT_S = 30.0  # fork and answer: instant, unless the machine is stalled


class PreloadError(WorkFailed, RuntimeError):
    """The preloaded interpreter could not start or stopped answering (one line)."""


def _ready(fds: list[int], timeout_s: float) -> list[int]:
    """The fds readable within the timeout (poll: no limit on fd numbers, unlike select)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return [fd for fd, _ in poller.poll(max(0, math.ceil(timeout_s * 1000)))]


class _Lines:
    """JSON lines from a pipe, each read with a deadline."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = b""

    def ready(self) -> bool:
        return b"\n" in self.buf

    def fill(self, timeout_s: float) -> bool:
        """Read what is there within the timeout; False at end of file."""
        if not _ready([self.fd], timeout_s):
            return True
        chunk = os.read(self.fd, 65536)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def next(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while not self.ready():
            left = deadline - time.monotonic()
            if left <= 0:
                raise PreloadError(f"the preloaded interpreter did not answer in {timeout_s:g} s")
            if not self.fill(left):
                raise PreloadError("the preloaded interpreter exited")
        line, _, self.buf = self.buf.partition(b"\n")
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise PreloadError(f"the preloaded interpreter said {line[:200]!r}") from exc
        if not isinstance(obj, dict):
            raise PreloadError(f"the preloaded interpreter said {line[:200]!r}")
        return obj


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - runner.TAIL_BYTES))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


class PreloadedPython:
    """One server: `python -B preload_server.py MODULE...`, started with `env`."""

    def __init__(
        self,
        python: str,
        modules: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        self.python = python
        self.modules = list(modules)
        self._dir = tempfile.TemporaryDirectory(prefix="gpuopt-preload-")
        self._errlog = Path(self._dir.name) / "server.err"
        # Marked as gpuopt's: the guard (or the next start) ends it if gpuopt dies.
        server_env = dict(os.environ if env is None else env)
        orphans.mark(server_env)
        try:
            with open(self._errlog, "wb") as errlog:
                self.proc = subprocess.Popen(
                    [python, "-B", str(SERVER), *self.modules],
                    cwd=self._dir.name,
                    env=server_env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=errlog,
                    start_new_session=True,
                    close_fds=True,
                    bufsize=0,
                )
        except OSError as exc:
            self._dir.cleanup()
            raise PreloadError(f"could not start {python}: {exc}") from exc
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self._lines = _Lines(self.proc.stdout.fileno())
        try:
            hello = self._lines.next(start_timeout_s)
        except PreloadError as exc:
            self.close()
            raise PreloadError(f"{exc}{self._server_error()}") from None
        if not hello.get("ready"):
            self.close()
            raise PreloadError(str(hello.get("error") or "the preloaded interpreter refused"))
        self.server_maxrss_kib = int(hello.get("maxrss_kib") or 0)
        self.subreaper = hello.get("subreaper") is True
        self.runs = 0
        self._broken = ""  # why it must not serve again, once a run was cut short

    def _server_error(self) -> str:
        text = _tail(self._errlog).strip()
        return f": {text.splitlines()[-1]}" if text else ""

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """Stop the server (end of its input, then a kill if it lingers)."""
        proc = self.proc
        if proc.poll() is None:
            try:
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None and not stream.closed:
                try:
                    stream.close()
                except OSError:  # unbuffered: nothing was left to lose
                    pass
        self._dir.cleanup()

    def __enter__(self) -> PreloadedPython:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, request: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            data = memoryview((json.dumps(request) + "\n").encode())
            while data:  # an unbuffered pipe may take a long request in parts
                data = data[self.proc.stdin.write(data) or 0 :]
        except OSError as exc:
            raise PreloadError(f"the preloaded interpreter is gone: {exc}") from None

    def run(
        self,
        argv: Sequence[str],
        cwd: str | Path,
        *,
        env: Mapping[str, str],
        timeout_s: float = 600.0,
        metric_source: str = "wall",
        metric_pattern: str | None = None,
        on_start: Callable[[int], None] | None = None,
    ) -> RunResult:
        """Run `argv[0]` (a Python script) with `argv[1:]` in `cwd`, with exactly `env`."""
        if metric_source not in runner.METRIC_SOURCES:
            raise ValueError(f"unknown metric source {metric_source!r}")
        if metric_source == "regex" and metric_pattern:
            runner.compile_metric_pattern(metric_pattern)
        if self._broken:
            raise PreloadError(f"the preloaded interpreter is out of step ({self._broken})")
        self.runs += 1
        run_mark = orphans.new_token()
        env = orphans.mark(dict(env), run_mark)
        out = Path(self._dir.name) / f"run{self.runs}.out"
        err = Path(self._dir.name) / f"run{self.runs}.err"
        request = {
            "id": self.runs,
            "argv": [str(a) for a in argv],
            "cwd": str(cwd),
            "env": dict(env),
            "out": str(out),
            "err": str(err),
        }
        pause = gc_control.Pause()  # no garbage collection on the run's clock
        started_us = time.time_ns() // 1000
        t0 = time.perf_counter()
        try:
            self._send(request)
            started = self._expect(lambda a: a.get("started") == request["id"], ANSWER_TIMEOUT_S)
            pid = started.get("pid")
            if not isinstance(pid, int):
                raise PreloadError(f"the preloaded interpreter said {started!r}, not a pid")
            try:
                done, t_end, timed_out = self._wait(pid, t0 + timeout_s, on_start, pause)
            except BaseException:
                runner._kill_group(pid, signal.SIGKILL)
                raise
            if not isinstance(done.get("status"), int):
                raise PreloadError(f"the preloaded interpreter answered {done!r}, not a status")
        except BaseException as exc:
            # An answer may still be on its way (Ctrl+C mid-run): never reuse this server.
            self._broken = type(exc).__name__
            orphans.sweep(orphans.RUN_VAR, run_mark, everywhere=True)
            raise
        finally:
            pause.end()
        if not self.subreaper:  # the server could not collect them: they went elsewhere
            orphans.sweep(orphans.RUN_VAR, run_mark, everywhere=True)
        ended_us = time.time_ns() // 1000
        status = int(done["status"])
        exit_code = os.waitstatus_to_exitcode(status)
        maxrss = int(done.get("maxrss_kib") or 0)
        peak = maxrss * 1024 if maxrss > self.server_maxrss_kib else None
        stdout_tail, stderr_tail = _tail(out), _tail(err)
        for path in (out, err):
            path.unlink(missing_ok=True)
        return runner.finish(
            timed_out=timed_out,
            timeout_s=timeout_s,
            exit_code=exit_code,
            stdout_tail=stdout_tail,
            stderr_tail=stderr_tail,
            metric_source=metric_source,
            metric_pattern=metric_pattern,
            wall_s=t_end - t0,
            user_s=float(done["utime"]),
            sys_s=float(done["stime"]),
            peak_rss_bytes=peak,
            started_us=started_us,
            ended_us=ended_us,
            env=env,
            containment=orphans.SUBREAPER if self.subreaper else orphans.SCAN,
        )

    def _expect(self, wanted: Callable[[dict[str, Any]], bool], timeout_s: float) -> dict[str, Any]:
        """The next answer that `wanted` accepts. Others are the server's word on a
        waiting child that died before taking a request: nothing to do with any run."""
        deadline = time.monotonic() + timeout_s
        while True:
            answer = self._lines.next(max(0.0, deadline - time.monotonic()))
            if wanted(answer):
                return answer

    def _wait(
        self,
        pid: int,
        deadline: float,
        on_start: Callable[[int], None] | None,
        pause: gc_control.Pause,
    ) -> tuple[dict[str, Any], float, bool]:
        """(the server's exit answer, when the child ended, whether it timed out)."""

        def ours(answer: dict[str, Any]) -> bool:
            return answer.get("done") == pid

        # The child is the server's, not ours: its pidfd still tells us the moment it ends.
        pidfd = runner._pidfd(pid)
        try:
            if on_start is not None:
                on_start(pid)
            t_end: float | None = None
            while True:
                while self._lines.ready():
                    answer = self._lines.next(0)
                    if ours(answer):
                        return answer, t_end if t_end is not None else time.perf_counter(), False
                now = time.perf_counter()
                pause.expire(now)
                if now >= deadline:
                    break
                fds = [self._lines.fd] + ([pidfd] if pidfd is not None and t_end is None else [])
                r = _ready(fds, min(deadline - now, 1.0))
                if pidfd is not None and pidfd in r:
                    t_end = time.perf_counter()
                    pause.end()
                if self._lines.fd in r and not self._lines.fill(0):
                    raise PreloadError("the preloaded interpreter exited during a run")
            runner._kill_group(pid, signal.SIGTERM)
            grace_end = time.perf_counter() + runner.KILL_GRACE_S
            while time.perf_counter() < grace_end and not self._lines.ready():
                if not self._lines.fill(min(0.05, grace_end - time.perf_counter())):
                    break
            runner._kill_group(pid, signal.SIGKILL)
            t_end = time.perf_counter()
            return self._expect(ours, ANSWER_TIMEOUT_S), t_end, True
        finally:
            if pidfd is not None:
                os.close(pidfd)


def preload_ok(
    python: str | None, launcher: str | None, env: Mapping[str, str] | None = None
) -> bool:
    """Are the runs of this workload to be forked from a preloaded interpreter?

    Only when asked: GPUOPT_PRELOAD=1 in gpuopt's environment or the workload's own. A
    forked child inherits the server's heap, and on a CPU that changes how a workload's
    large allocations behave: a softmax over 16 MiB tensors took twice the page faults
    and ran 1.5-3x slower forked than spawned (small tensors, like the demo's, measured
    the same). Never behind a launcher (the run must start on the node srun gives it),
    when the interpreter is a command line ("uv run python"), or when PYTHONPATH holds a
    relative entry (a spawned run reads it from the worktree, the server from elsewhere).
    """
    env = env if env is not None else os.environ
    if env.get("GPUOPT_PRELOAD", "").strip().lower() not in ("1", "yes", "true", "on"):
        return False
    if launcher and launcher.strip():
        return False
    pythonpath = env.get("PYTHONPATH", "")
    if pythonpath and not all(os.path.isabs(p) for p in pythonpath.split(os.pathsep)):
        return False
    return not (python and len(python.split()) > 1)
