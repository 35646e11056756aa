"""Run one workload command as one whole process and measure it.

One call of `run_command` is one replicate: `bash -c COMMAND` in the worktree (behind the
launcher prefix when one is set, e.g. `srun -N1 --gpus=1`), in a process group of its
own so that a timeout can kill the whole group (a background group: the terminal's
signals go to gpuopt's, not to the run). Both output streams are read through one
poller (no threads) into bounded buffers; only the last 64 KiB of each is kept. The
child's exit is watched through a pidfd where the kernel has them, so the wall time ends
when the process ends, not when some background grandchild lets go of the pipes. When
it has ended, what it left is killed and reaped, `setsid` descendants included
(`measure.orphans`: gpuopt is their subreaper, and every process of the run carries the
run's mark in its environment); the run records which way (`RunResult.containment`).

Kept cheap on purpose: the modules imported here are small and already loaded by most
Python programs, and a run adds about one `fork`/`exec` plus a few system calls to what
the command itself costs.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import select
import shlex
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from measure import gc_control, orphans, spawn
from measure.peak_rss import counter_slack_kib, own_peak_kib
from measure.redact import Redactor
from measure.vocabulary import RunStatus

TAIL_BYTES = 64 * 1024
KILL_GRACE_S = 1.0  # between SIGTERM to the group and SIGKILL
SIGNAL_CHECK_S = 0.25  # the longest a run's wait goes without its signal handlers running
DRAIN_GRACE_S = 0.05  # how long to wait for pipes held open by leftovers after the exit


METRIC_SOURCES = ("wall", "regex", "json")


@dataclass
class RunResult:
    status: RunStatus  # OK, FAILED, TIMEOUT or NO_METRIC (the session quarantines)
    value: float | None  # the metric (None unless the status is OK)
    exit_code: int | None
    wall_s: float
    user_s: float | None
    sys_s: float | None
    peak_rss_bytes: int | None
    stdout_tail: str  # last 64 KiB, invalid UTF-8 replaced
    stderr_tail: str
    started_us: int  # epoch microseconds
    ended_us: int
    error: str = ""  # one line saying what went wrong, if anything
    containment: str = ""  # how its descendants were collected (measure.orphans)
    minor_faults: int | None = None  # page faults of the process (rusage of wait4)
    major_faults: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == RunStatus.OK


class _Tail:
    """The last TAIL_BYTES of a stream, in bounded memory."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def add(self, chunk: bytes) -> None:
        self.buf += chunk
        if len(self.buf) > 2 * TAIL_BYTES:
            del self.buf[: len(self.buf) - TAIL_BYTES]

    def text(self) -> str:
        return bytes(self.buf[-TAIL_BYTES:]).decode("utf-8", errors="replace")


def compile_metric_pattern(pattern: str) -> re.Pattern[str]:
    """A regex metric: the named group `value` if present, else group 1, else the match."""
    try:
        return re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        raise ValueError(f"the metric pattern {pattern!r} is not a valid regex: {exc}") from exc


def extract_metric(stdout: str, source: str, pattern: str | None) -> tuple[float | None, str]:
    """(value, error): the metric a run printed, the last match winning."""
    if source == "regex":
        if not pattern:
            return None, "no metric pattern was given for a regex metric"
        rx = compile_metric_pattern(pattern)
        last = None
        for last in rx.finditer(stdout):  # noqa: B007 - keep the last match
            pass
        if last is None:
            return None, f"no line of the output matched {pattern!r}"
        if "value" in rx.groupindex:
            text = last.group("value")
        elif rx.groups >= 1:
            text = last.group(1)
        else:
            text = last.group(0)
        try:
            value = float(text)
        except (TypeError, ValueError):
            return None, f"the matched text {text!r} is not a number"
    elif source == "json":
        if not pattern:
            return None, "no key was given for a JSON metric"
        found = _json_metric(stdout, pattern)
        if isinstance(found, str):
            return None, found
        value = found
    else:
        return None, f"unknown metric source {source!r}"
    if not math.isfinite(value):
        return None, f"the metric is not a finite number ({value})"
    return value, ""


_MISSING = object()


def _json_lookup(obj: object, key: str) -> object:
    if isinstance(obj, dict) and key in obj:  # a key that itself contains dots
        return obj[key]
    for part in key.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


def _json_metric(stdout: str, key: str) -> float | str:
    """The key's value in the last JSON line that has it, or an error in words."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        found = _json_lookup(obj, key)
        if found is _MISSING:
            continue
        if isinstance(found, bool) or not isinstance(found, int | float):
            return f"the JSON key {key!r} holds {found!r}, not a number"
        return float(found)
    return f"no JSON line of the output has the key {key!r}"


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


# A command made only of words (no expansion, redirection, pipe, list, glob, assignment
# or reserved word) means the same run directly as through `bash -c`, and costs a shell's
# start-up less per run (3-8 ms on a loaded 2-core VM): `shell=AUTO` runs it so.
AUTO = "auto"
_SHELL_SYNTAX = frozenset("|&;<>()$`\\*?[]#~{}!\n")
_NOT_PROGRAMS = frozenset(
    [
        "!",
        "[[",
        "]]",
        "{",
        "}",
        "case",
        "coproc",
        "do",
        "done",
        "elif",
        "else",
        "esac",
        "fi",
        "for",
        "function",
        "if",
        "in",
        "select",
        "then",
        "time",
        "until",
        "while",
        ".",
        "alias",
        "bind",
        "builtin",
        "caller",
        "cd",
        "command",
        "declare",
        "dirs",
        "disown",
        "enable",
        "eval",
        "exec",
        "exit",
        "export",
        "fc",
        "getopts",
        "hash",
        "help",
        "history",
        "jobs",
        "let",
        "local",
        "logout",
        "mapfile",
        "popd",
        "pushd",
        "read",
        "readarray",
        "readonly",
        "return",
        "set",
        "shift",
        "shopt",
        "source",
        "suspend",
        "trap",
        "type",
        "typeset",
        "ulimit",
        "umask",
        "unalias",
        "unset",
        "wait",
    ]
)


def direct_argv(
    command: str, cwd: str | Path, path: str | None = None, launcher: str | None = None
) -> list[str] | None:
    """The command's words when it can run without a shell, with the same meaning, and its
    program is found (on `path`, or relative to `cwd`); None when it needs the shell."""
    found = _direct_argv(command, str(cwd), path, launcher)
    return None if found is None else list(found)


@functools.lru_cache(maxsize=256)  # a round asks it per run: the PATH search once
def _direct_argv(
    command: str, cwd: str, path: str | None, launcher: str | None
) -> tuple[str, ...] | None:
    import shutil

    if launcher or any(ch in _SHELL_SYNTAX for ch in command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or words[0] in _NOT_PROGRAMS or "=" in words[0]:
        return None
    program = words[0]
    if "/" in program:
        found = Path(cwd, program)
        if not (found.is_file() and os.access(found, os.X_OK)):
            return None
    elif shutil.which(program, path=path) is None:
        return None
    return tuple(words)


@functools.lru_cache(maxsize=256)  # a round splits the same command at every run
def _words(command: str) -> tuple[str, ...]:
    return tuple(shlex.split(command))


@functools.lru_cache(maxsize=256)
def _which(program: str, path: str | None) -> str | None:
    import shutil

    if path is None or any(not part.startswith("/") for part in path.split(os.pathsep)):
        return None  # a relative PATH entry depends on the run's directory: let exec search
    return shutil.which(program, path=path)


def shell_cost_s(shell: str = "bash", runs: int = 10, cwd: str | Path = ".") -> float | None:
    """The median wall time of the shell starting and running nothing (`SHELL -c ''`):
    what a workload run through it pays per run, as hyperfine measures before it subtracts
    it. None when the shell does not run."""
    import statistics

    times = []
    for _ in range(runs):
        res = run_command("", cwd, shell=shell, kill_leftovers=False)
        if res.status is not RunStatus.OK:
            return None
        times.append(res.wall_s)
    return statistics.median(times)


_null: tuple[int, int] | None = None  # (pid that opened it, fd): /dev/null, kept open


def _devnull() -> int:
    """The run's stdin: /dev/null, opened once per process (not a file open per run)."""
    global _null
    pid = os.getpid()
    if _null is None or _null[0] != pid:
        _null = (pid, os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
    return _null[1]


def run_command(
    command: str,
    cwd: str | Path,
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 600.0,
    launcher: str | None = None,
    metric_source: str = "wall",
    metric_pattern: str | None = None,
    on_start: Callable[[int], None] | None = None,
    kill_leftovers: bool = True,
    shell: str | None = "bash",
    env_is_whole: bool = False,
) -> RunResult:
    """Run `bash -c command` in `cwd` once and measure it (`shell`: another shell, None
    to run the command's words without one, as hyperfine's -N does, or AUTO: without one
    when `direct_argv` says the words mean the same, through bash otherwise).

    `env` is layered over the current environment (a workload sets a few variables; it
    does not have to restate PATH); with `env_is_whole` it is the whole environment (a
    round's executor makes it once: copying os.environ per run decodes every variable).
    With `kill_leftovers` (the default for workloads), processes the command left behind
    in its group are killed when it exits, so that they cannot disturb the next run. A
    metric pattern that is not a valid regex or an unknown metric source raise ValueError
    before anything runs.
    """
    if metric_source not in METRIC_SOURCES:
        raise ValueError(f"unknown metric source {metric_source!r}; use one of {METRIC_SOURCES}")
    if metric_source == "regex" and metric_pattern:
        compile_metric_pattern(metric_pattern)
    if env_is_whole and env is not None:
        full_env = dict(env)
    else:
        full_env = dict(os.environ)
        if env is not None:
            full_env.update(env)
    if shell == AUTO:
        direct = direct_argv(command, cwd, full_env.get("PATH"), launcher)
        program = direct if direct is not None else ["bash", "-c", command]
    else:
        program = list(_words(command)) if shell is None else [shell, "-c", command]
    argv = [*shlex.split(launcher), *program] if launcher else program
    # The program found once, not by an execve per PATH entry each run (argv[0] unchanged).
    executable = _which(argv[0], full_env.get("PATH")) if "/" not in argv[0] else None
    run_mark = orphans.new_token()
    orphans.mark(full_env, run_mark)

    out, err = _Tail(), _Tail()
    # Our own pipes, and their write ends kept open here until the command has exited:
    # then the end of its output never wakes us apart from its exit (the pidfd), one wait
    # where a pipe's hang-up, then the exit, were two; on a loaded machine each wait that
    # ends is a turn in the run queue, in the timed wall clock.
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    write_ends = [out_w, err_w]
    fds = {out_r: out, err_r: err}
    poller = select.poll()  # the pipes watched from before the clock starts
    for fd in fds:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)

    def close_write_ends() -> None:
        while write_ends:
            os.close(write_ends.pop())

    # Made ready before the clock starts: the figure holds the start, not our preparation.
    start = spawn.Start(
        argv,
        executable=executable,
        cwd=str(cwd),
        env=full_env,
        stdin=_devnull(),
        stdout=out_w,
        stderr=err_w,
        vary=orphans.RUN_VAR,
    )
    forked_by = orphans.boot_tick()
    pause = gc_control.Pause()  # no garbage collection on the run's clock
    started_us = time.time_ns() // 1000
    t0 = time.perf_counter()
    try:
        pid = start.now()
    except OSError as exc:
        now = time.perf_counter()
        pause.end()
        for fd in (out_r, err_r, *write_ends):
            os.close(fd)
        return RunResult(
            status=RunStatus.FAILED,
            value=None,
            exit_code=None,
            wall_s=now - t0,
            user_s=None,
            sys_s=None,
            peak_rss_bytes=None,
            stdout_tail="",
            stderr_tail="",
            started_us=started_us,
            ended_us=time.time_ns() // 1000,
            error=_one_line(Redactor(full_env)(f"could not start the command: {exc}")),
        )

    # The floor: our mark once the child has exec'd (spawn returns only then). The child's
    # figure starts from our high-water mark at its exec; our later growth is not in it, so
    # a second read after the end only raised the floor, and could read lower (a fresh-clone
    # CI run saw `true` read 711 MB, the pytest worker's size, when only that was read).
    floor = own_peak_kib()
    orphans.watch_group(pid, forked_by)  # if gpuopt dies during the run, the guard ends it
    pidfd = _pidfd(pid)
    if pidfd is None:
        close_write_ends()  # no exit to wait on: the pipes' hang-up and a 5 ms poll say it
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)

    deadline = t0 + timeout_s
    timed_out = False
    wait_status: int | None = None
    rusage = None
    t_end: float | None = None

    def exited() -> bool:
        """Has the command exited? (Peeks: the zombie keeps its pid and process group.)"""
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return info is not None and info.si_pid == pid

    def reap() -> None:
        nonlocal wait_status, rusage
        if wait_status is None:
            _, wait_status, rusage = os.wait4(pid, 0)

    try:
        if on_start is not None:
            on_start(pid)
        open_fds = set(fds)
        while t_end is None:
            now = time.perf_counter()
            pause.expire(now)
            if now >= deadline:
                timed_out = True
                break
            if pidfd is None:
                wait_ms = min(deadline - now, 0.005) * 1000
            else:
                # Not one wait to the deadline: a signal taken just before poll() begins
                # (or on another thread) interrupts nothing, and its Python handler (the
                # "stop after the current run" of TERM, HUP, Ctrl+C) would wait for the
                # run's end; a run that waits to be stopped would then never end.
                wait_ms = min(deadline - now, SIGNAL_CHECK_S) * 1000
            for fd, _ev in poller.poll(math.ceil(wait_ms)):
                if fd == pidfd:
                    t_end = time.perf_counter()
                    continue
                chunk = os.read(fd, 65536)
                if chunk:
                    fds[fd].add(chunk)
                else:
                    poller.unregister(fd)
                    open_fds.discard(fd)
            if pidfd is None and t_end is None and exited():
                t_end = time.perf_counter()
        pause.end()  # the clock has stopped: a collection due may run
        if timed_out:
            _kill_group(pid, signal.SIGTERM)
            grace_end = time.perf_counter() + KILL_GRACE_S
            while not exited() and time.perf_counter() < grace_end:
                time.sleep(0.01)
            _kill_group(pid, signal.SIGKILL)  # the leader if still there, and its stragglers
            t_end = time.perf_counter()
        elif kill_leftovers:
            # The leader is a zombie until reaped, so its group id cannot be reused yet.
            _kill_group(pid, signal.SIGKILL)
        if pidfd is not None:
            poller.unregister(pidfd)
        close_write_ends()  # the reads below end at the output's end, not at our own ends
        # Drain what the command wrote; leftovers (of a hook) may hold the pipes: not long.
        drain_end = time.perf_counter() + DRAIN_GRACE_S
        while open_fds:
            wait_ms = (drain_end - time.perf_counter()) * 1000
            if wait_ms <= 0:
                break
            for fd, ev in poller.poll(math.ceil(wait_ms)):
                # A hang-up with nothing to read is the end (no read to be told so)
                chunk = os.read(fd, 65536) if ev & select.POLLIN else b""
                if chunk:
                    fds[fd].add(chunk)
                else:
                    poller.unregister(fd)
                    open_fds.discard(fd)
        reap()
        if kill_leftovers or timed_out:
            # What left the group (setsid) was handed to us as its parents died.
            orphans.sweep(orphans.RUN_VAR, run_mark, group=pid)
    except BaseException:
        _kill_group(pid, signal.SIGKILL)
        try:
            reap()
        except ChildProcessError:
            pass
        orphans.sweep(orphans.RUN_VAR, run_mark, group=pid)
        raise
    finally:
        pause.end()
        orphans.unwatch_group(pid)
        close_write_ends()
        os.close(out_r)
        os.close(err_r)
        if pidfd is not None:
            os.close(pidfd)
    ended_us = time.time_ns() // 1000
    if t_end is None:
        t_end = time.perf_counter()
    assert wait_status is not None
    exit_code = os.waitstatus_to_exitcode(wait_status)
    wall_s = t_end - t0
    user_s = rusage.ru_utime if rusage is not None else None
    sys_s = rusage.ru_stime if rusage is not None else None
    peak = None
    # Linux counts the parent's resident set in a child's peak RSS (it is recorded when
    # the child execs): a peak not above our mark at that moment (give or take the kernel's
    # batched count, counter_slack_kib) says nothing of the command.
    if rusage is not None and rusage.ru_maxrss > floor + counter_slack_kib():
        peak = int(rusage.ru_maxrss) * 1024  # KiB on Linux
    stdout_tail, stderr_tail = out.text(), err.text()

    result = finish(
        timed_out=timed_out,
        timeout_s=timeout_s,
        exit_code=exit_code,
        stdout_tail=stdout_tail,
        stderr_tail=stderr_tail,
        metric_source=metric_source,
        metric_pattern=metric_pattern,
        wall_s=wall_s,
        user_s=user_s,
        sys_s=sys_s,
        peak_rss_bytes=peak,
        started_us=started_us,
        ended_us=ended_us,
        env=full_env,
        containment=orphans.containment(),
    )
    if rusage is not None:
        result.minor_faults, result.major_faults = int(rusage.ru_minflt), int(rusage.ru_majflt)
    return result


def finish(
    *,
    timed_out: bool,
    timeout_s: float,
    exit_code: int,
    stdout_tail: str,
    stderr_tail: str,
    metric_source: str,
    metric_pattern: str | None,
    wall_s: float,
    user_s: float | None,
    sys_s: float | None,
    peak_rss_bytes: int | None,
    started_us: int,
    ended_us: int,
    env: Mapping[str, str] | None = None,
    containment: str = "",
) -> RunResult:
    """The result of a finished process: its status, metric and one-line error.

    The metric is read from the output as printed; what is kept of the output (and the
    error made from it) has the values of `env`'s secret-looking variables redacted.
    """
    hide = _LazyRedactor(env)
    value: float | None = None
    error = ""
    if timed_out:
        status = RunStatus.TIMEOUT
        error = f"timed out after {timeout_s:g} s; the process group was killed"
    elif exit_code != 0:
        status = RunStatus.FAILED
        if exit_code < 0:
            error = f"killed by signal {-exit_code}"
        else:
            error = f"exited with status {exit_code}"
        last = stderr_tail.strip().splitlines()[-1:] if stderr_tail.strip() else []
        if last:
            error += f": {hide(last[0])}"
    elif metric_source == "wall":
        status, value = RunStatus.OK, wall_s
    else:
        value, error = extract_metric(stdout_tail, metric_source, metric_pattern)
        status = RunStatus.OK if value is not None else RunStatus.NO_METRIC
    return RunResult(
        status=status,
        value=value,
        exit_code=exit_code,
        wall_s=wall_s,
        user_s=user_s,
        sys_s=sys_s,
        peak_rss_bytes=peak_rss_bytes,
        stdout_tail=hide(stdout_tail),
        stderr_tail=hide(stderr_tail),
        started_us=started_us,
        ended_us=ended_us,
        error=_one_line(hide(error)),
        containment=containment,
    )


class _LazyRedactor:
    """A Redactor made only when there is text to redact: making one scans the whole
    environment for secrets (0.5 ms a run), and most runs of a short command print
    nothing and fail with no error."""

    __slots__ = ("_env", "_redactor")

    def __init__(self, env: Mapping[str, str] | None) -> None:
        self._env = env
        self._redactor: Redactor | None = None

    def __call__(self, text: str) -> str:
        if not text:
            return text
        if self._redactor is None:
            self._redactor = Redactor(self._env)
        return self._redactor(text)


def run_hook(
    command: str,
    cwd: str | Path,
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 600.0,
) -> RunResult:
    """Run a setup, prepare or cleanup hook (or a check command): status, output, times.

    Unlike a workload, a hook may start something meant to outlive it (a setup hook
    starting a server), so what it leaves behind is not killed unless it times out.
    """
    return run_command(command, cwd, env=env, timeout_s=timeout_s, kill_leftovers=False)
