"""No process of a run outlives the run, and none outlives gpuopt.

Killing a run's process group is not enough: compilation servers, MPS and Ray call
`setsid` and leave it. Three layers, each for what the one before cannot reach:

- Every process gpuopt starts for a workload carries marks in its environment, inherited
  by all it starts in turn, `setsid` or not: GPUOPT_OWNER (this gpuopt process),
  GPUOPT_JOB (the baseline or round) and GPUOPT_RUN (the run).
- gpuopt is a child subreaper (PR_SET_CHILD_SUBREAPER): a descendant whose parent dies is
  handed to gpuopt, not to init. At the end of each run `sweep` kills the run's group,
  then every child of gpuopt carrying the run's mark, reaps it, and goes on until none is
  left (each one killed hands its own children up). Where no subreaper can be had, the
  same marks are found by scanning /proc ("environment scan"); init reaps those.
- A guard process, started with the first run, holds the read end of a pipe only gpuopt
  writes to. When gpuopt ends in any way, SIGKILL included, the pipe closes and the guard
  kills every process carrying gpuopt's mark. A per-run parent-death signal would cost a
  fork instead of a vfork for every run (measured: 10 ms instead of 1 ms from a 200 MB
  parent, inside the timed wall clock) and reach only the run's first process.
- If the guard was killed too, the next start (`sweep_dead_owners`, before stale worktrees
  are removed) kills what a gpuopt that is gone left behind.

The guard also knows each run's process group (gpuopt writes one line to the pipe when a
run starts and one when it ends) and, while a run is live, looks at gpuopt's descendants
ten times a second, recording each one's identity (pid and start time) in a file of its
own (`procs/OWNER`, under the user's state directory). When gpuopt ends it kills the live
runs' groups and every recorded identity still alive, marked or not (`env -i`, `setsid`,
double forks, `nohup`). If the guard died too, the next start reads the files of owners
that are gone and kills what they name, by identity: a pid whose start time differs is
another process by now and is left alone. Nothing is ever found by name.

A process that replaces its whole environment (`env -i`, `sudo`) loses the marks. As a
subreaper gpuopt still gets it when its parent ends: a child of gpuopt outside gpuopt's
own process group that carries no mark of this gpuopt at all was handed up by a run
(gpuopt starts nothing of its own that way, except the guard), so the run's sweep kills it
too. Without a subreaper such a process escapes all but the run's process group.
Standard library only: the guard runs this file by path.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, MutableMapping
from pathlib import Path

OWNER_VAR = "GPUOPT_OWNER"
JOB_VAR = "GPUOPT_JOB"
RUN_VAR = "GPUOPT_RUN"

SUBREAPER = "subreaper"  # how a run's descendants were collected (recorded on the run)
SCAN = "environment scan"

SWEEP_TIMEOUT_S = 2.0  # a process in uninterruptible sleep may take this long to die
_PR_SET_CHILD_SUBREAPER = 36

_lock = threading.Lock()
_subreaper: bool | None = None
_guard: subprocess.Popen[bytes] | None = None
_guard_for: int | None = None  # the pid that started it (a fork must start its own)


def new_token() -> str:
    return secrets.token_hex(8)


def _read(path: str) -> bytes:
    """A whole /proc file in four system calls (open, reads to the end, close): a Python
    file object adds fstat, ioctl and lseek, and a run reads several. Read to the end, not
    to a short read: /proc may hand a file over in pieces."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _stat(pid: int | str) -> tuple[str, int, int, int, int] | None:
    """(state, ppid, process group, session, start time in ticks) of a process."""
    try:
        data = _read(f"/proc/{pid}/stat")
    except OSError:
        return None
    fields = data.rpartition(b")")[2].split()
    try:
        return (fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]),
                int(fields[19]))  # fmt: skip
    except (IndexError, ValueError):
        return None


_own_id: tuple[int, str] | None = None


def owner_id(pid: int | None = None) -> str:
    """`PID.START`: names one process for good (a pid alone may be reused)."""
    global _own_id
    me = os.getpid()
    pid = me if pid is None else pid
    if pid == me and _own_id is not None and _own_id[0] == me:
        return _own_id[1]
    st = _stat(pid)
    found = f"{pid}.{st[4] if st else 0}"
    if pid == me:
        _own_id = (me, found)
    return found


def _owner_alive(owner: str) -> bool:
    pid, _, start = owner.partition(".")
    try:
        st = _stat(int(pid))
    except ValueError:
        return False
    return st is not None and st[0] not in "ZX" and str(st[4]) == start


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants (once); whether it is."""
    global _subreaper
    if _subreaper is not None:  # settled once: asked three times a run, without the lock
        return _subreaper
    with _lock:
        if _subreaper is None:
            became = False  # set once settled: it is read without the lock
            if sys.platform.startswith("linux"):
                try:
                    libc = ctypes.CDLL(None, use_errno=True)
                    became = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
                except (OSError, AttributeError):
                    became = False
            _subreaper = became
        return _subreaper


def containment() -> str:
    return SUBREAPER if become_subreaper() else SCAN


def mark(env: MutableMapping[str, str], run: str | None = None) -> MutableMapping[str, str]:
    """Put this gpuopt's mark (and the run's) into a child's environment; start the guard."""
    become_subreaper()
    env[OWNER_VAR] = owner_id()
    if run is not None:
        env[RUN_VAR] = run
    _start_guard()
    return env


def _start_guard() -> None:
    global _guard, _guard_for
    with _lock:
        if _guard is not None and _guard_for == os.getpid() and _guard.poll() is None:
            return
        try:
            _guard = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    os.path.abspath(__file__),
                    "guard",
                    owner_id(),
                    str(_procs_file(owner_id())),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},
                start_new_session=True,  # a signal to gpuopt's group does not reach it
                close_fds=True,
            )
            _guard_for = os.getpid()
        except OSError:
            _guard = None


def procs_dir() -> Path:
    """Where the guards record the identities of runs' processes (one file per gpuopt)."""
    given = os.environ.get("GPUOPT_PROCS_DIR")
    if given:
        return Path(given)
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(state) / "gpuopt" / "procs"


def _procs_file(owner: str) -> Path:
    return procs_dir() / owner


def _tell_guard(line: str) -> None:
    """One line to the guard (a run's group starts or ends); never fails the run."""
    guard = _guard
    if guard is None or guard.stdin is None or _guard_for != os.getpid():
        return
    try:
        guard.stdin.write(line.encode() + b"\n")
        guard.stdin.flush()
    except (OSError, ValueError):
        pass


def boot_tick() -> int:
    """Now, in the clock of /proc's start times (ticks since boot, CLOCK_BOOTTIME): taken
    before a fork, no later than the child's own start time."""
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME) * _CLK_TCK // 1_000_000_000


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def watch_group(pgid: int, started_by: int | None = None) -> None:
    """A run's process group started: the guard kills it if gpuopt dies meanwhile.

    `started_by`: a `boot_tick()` taken before the leader was forked, so that /proc need
    not be read on the run's clock; the guard's test (a member started no earlier than the
    leader) holds with any such lower bound."""
    if started_by is None:
        st = _stat(pgid)
        started_by = st[4] if st else 0
    _tell_guard(f"+ {pgid} {started_by}")


def unwatch_group(pgid: int) -> None:
    """That run has ended and been swept."""
    _tell_guard(f"- {pgid}")


def _has_mark(pid: int | str, entry: bytes) -> bool:
    try:
        return entry in _read(f"/proc/{pid}/environ").split(b"\0")
    except OSError:
        return False


def _all_pids() -> list[int]:
    """Every other process of this user (never another user's, even as root)."""
    me, uid = os.getpid(), os.getuid()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid == uid:
                out.append(int(name))
        except OSError:
            continue
    return out


def _children() -> list[int]:
    """The children a sweep after a run must look at: those of the main thread, which the
    kernel hands every orphan to (its first live thread, `find_alive_thread`), and those of
    the calling thread, which started the run. Not every thread's: a read per thread was a
    third of the sweep, paid at the end of every run (tests/measure/test_orphans.py holds
    a run started in a worker thread to this)."""
    me = os.getpid()
    try:
        out = [int(p) for p in _main_thread_children(me).split()]
        tid = threading.get_native_id()
        if tid != me:
            out.extend(int(p) for p in _read(f"/proc/{me}/task/{tid}/children").split())
        return out
    except OSError:  # no /proc/.../children in this kernel: read every process's parent
        return [p for p in _all_pids() if (st := _stat(p)) is not None and st[1] == me]


# The main thread's children file stays open and is read again from its start (a pread):
# opening it was most of what the sweep after every run cost. Only the main thread's: it
# lives as long as the process, where another thread's id can pass to a new thread.
_main_children: tuple[int, int, int, int] | None = None  # (pid, fd, st_dev, st_ino)


def _main_thread_children(me: int) -> bytes:
    global _main_children
    with _lock:
        kept = _main_children
        if kept is not None and kept[0] == me:
            st = os.fstat(kept[1])
            if (st.st_dev, st.st_ino) == kept[2:]:
                return _pread_all(kept[1])
            # the number was closed by other code and now names another file: not ours
        fd = os.open(f"/proc/{me}/task/{me}/children", os.O_RDONLY | os.O_CLOEXEC)
        st = os.fstat(fd)
        _main_children = (me, fd, st.st_dev, st.st_ino)
        return _pread_all(fd)


def _pread_all(fd: int) -> bytes:
    chunks = [os.pread(fd, 65536, 0)]
    while len(chunks[-1]) == 65536:
        chunks.append(os.pread(fd, 65536, 65536 * len(chunks)))
    return b"".join(chunks)


def _handed_up_unmarked(pid: int, group: int) -> bool:
    """A child of this subreaper that lost every mark (`env -i`) and left our process
    group: a run's descendant whose parent ended, never something gpuopt started itself
    (its git and helper processes stay in its group; the guard is known by pid)."""
    if group == os.getpgrp() or (_guard is not None and pid == _guard.pid):
        return False
    try:
        entries = _read(f"/proc/{pid}/environ").split(b"\0")
    except OSError:
        return False
    return not any(e.startswith(OWNER_VAR.encode() + b"=") for e in entries)


def _reap(pid: int) -> bool:
    """Reap a child of ours if it has ended; True once it is gone (or was never ours)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        st = _stat(pid)
        return st is None or st[0] in "ZX"
    return done == pid


def sweep(var: str, value: str, *, group: int | None = None, everywhere: bool = False) -> list[int]:
    """Kill and reap every process marked `var=value`, and the process group `group`.

    As a subreaper only this process's children need looking at (orphans come to it);
    `everywhere` looks at every process (descendants handed to another process).
    Returns the pids killed. Goes on until none is left or SWEEP_TIMEOUT_S has passed.
    """
    entry = f"{var}={value}".encode()
    subreaper = become_subreaper() and not everywhere
    killed: list[int] = []
    pending: set[int] = set()
    end = time.monotonic() + SWEEP_TIMEOUT_S
    while True:
        busy = False  # the group still has members (its id cannot be reused meanwhile)
        # A pass that kills something is followed by another: a child forked while this
        # pass ran is handed to us only when its parent dies, after we looked.
        found = False
        if group is not None:
            try:
                os.killpg(group, signal.SIGKILL)
                busy = True
            except (ProcessLookupError, PermissionError):
                pass  # nothing is left in the group (zombies included)
        for pid in _children() if subreaper else _all_pids():
            if _guard is not None and pid == _guard.pid:
                continue  # the guard: never a run's (and never marked)
            st = _stat(pid)
            if st is None:
                continue
            if st[0] in "ZX":
                if subreaper and (pid in pending or (busy and st[2] == group)):
                    pending.add(pid)  # one of the run's, dead: reap it below
                continue
            if pid not in pending and (
                _has_mark(pid, entry) or (subreaper and _handed_up_unmarked(pid, st[2]))
            ):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                killed.append(pid)
                pending.add(pid)
                found = True
        # a process reaped here handed its children to us when it died, maybe after the
        # listing above: one more pass looks at them
        still = {pid for pid in pending if not _reap(pid)}
        reaped = len(still) < len(pending)
        pending = still
        if (not busy and not pending and not found and not reaped) or time.monotonic() > end:
            return killed
        time.sleep(0.002)


def _marked_by(pids: Iterable[int]) -> dict[int, str]:
    """The owner mark of each process that has one."""
    prefix = f"{OWNER_VAR}=".encode()
    out = {}
    for pid in pids:
        try:
            entries = _read(f"/proc/{pid}/environ").split(b"\0")
        except OSError:
            continue
        for e in entries:
            if e.startswith(prefix):
                out[pid] = e[len(prefix) :].decode("ascii", "replace")
                break
    return out


def kill_owned(owner: str | None = None, timeout_s: float = 5.0) -> list[int]:
    """Kill every process marked as started by `owner` or, without one, by a gpuopt
    process that no longer runs. Returns the pids killed."""
    killed: list[int] = []
    end = time.monotonic() + timeout_s
    while True:
        found = [
            pid
            for pid, mark in _marked_by(_all_pids()).items()
            if (mark == owner if owner is not None else not _owner_alive(mark))
            and (st := _stat(pid)) is not None
            and st[0] not in "ZX"
        ]
        killed += _kill_each(found)
        if not found or time.monotonic() > end:
            return killed
        time.sleep(0.01)


def sweep_dead_owners() -> list[int]:
    """At a start: kill what gpuopt processes that are gone left running: what carries
    their mark, and what their guards recorded by identity (a guard killed with its
    gpuopt could not act)."""
    killed = kill_owned(None)
    try:
        files = list(procs_dir().iterdir())
    except OSError:
        return killed
    for path in files:
        if _owner_alive(path.name):
            continue
        try:
            text = path.read_text()
        except OSError:
            continue
        groups, identities = _parse_record(text)
        killed += _kill_recorded(groups, identities)
        path.unlink(missing_ok=True)
    return killed


def _parse_record(text: str) -> tuple[dict[int, int], set[tuple[int, int]]]:
    """A guard's file: `G pgid start` for a run's group, `P pid start` for a process."""
    groups: dict[int, int] = {}
    identities: set[tuple[int, int]] = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
            continue
        if parts[0] == "G":
            groups[int(parts[1])] = int(parts[2])
        elif parts[0] == "P":
            identities.add((int(parts[1]), int(parts[2])))
    return groups, identities


def _kill_recorded(groups: dict[int, int], identities: set[tuple[int, int]]) -> list[int]:
    """Kill each recorded process that is still the same one (its start time matches), and
    every member of a recorded group started no earlier than the group's leader (a group
    id is not reused while a member lives; a newer group with a reused id started later
    than all of ours were recorded only if its leader's pid came round again)."""
    killed: list[int] = []
    end = time.monotonic() + SWEEP_TIMEOUT_S
    while True:
        found = []
        for pid in _all_pids():
            st = _stat(pid)
            if st is None or st[0] in "ZX":
                continue
            start = groups.get(st[2])
            if (pid, st[4]) in identities or (start is not None and st[4] >= start):
                found.append(pid)
        killed += _kill_each(found)
        if not found or time.monotonic() > end:
            return killed
        time.sleep(0.01)


def _descendants(root: int) -> list[int]:
    """Every process under `root` now (a subreaper's orphans are its children)."""
    out: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                kids = [int(p) for p in _read(f"/proc/{pid}/task/{tid}/children").split()]
            except OSError:
                continue
            out.extend(kids)
            todo.extend(kids)
    return out


WATCH_INTERVAL_S = 0.1  # how often the guard looks at gpuopt's descendants during a run


def _guard_main(owner: str, record: str | None = None) -> int:
    """The guard: follow gpuopt's runs until its pipe ends, then kill what they left."""
    import select

    for sig in (signal.SIGINT, signal.SIGHUP):  # a terminal's signals are not its end
        signal.signal(sig, signal.SIG_IGN)
    root = int(owner.partition(".")[0])
    guard_pid = os.getpid()
    root_stat = _stat(root)
    own_group = root_stat[2] if root_stat else -1  # gpuopt's own helpers (git) live there
    groups: dict[int, int] = {}
    seen: set[tuple[int, int]] = set()
    out = None
    pending = b""

    def note(line: str) -> None:
        nonlocal out
        if record is None:
            return
        try:
            if out is None:
                Path(record).parent.mkdir(parents=True, exist_ok=True)
                out = open(record, "a", encoding="ascii")  # noqa: SIM115
            out.write(line + "\n")
            out.flush()
        except OSError:
            pass

    # While runs come, the pipe is read when the watch is due, or at once when gpuopt
    # ends (its pidfd): a run's start and end, written at every run, then wake no one on
    # gpuopt's clock (one or two wake-ups of this process per run, each a turn in a busy
    # run queue, were a tenth of a run of `true`). After a quiet watch the pipe wakes us.
    try:
        root_fd: int | None = os.pidfd_open(root)
    except (AttributeError, OSError):
        root_fd = None
    os.set_blocking(0, False)
    ended = False
    heard = False  # the last read of the pipe had lines: more runs are likely to follow
    while not ended:
        watching = (bool(groups) or heard) and root_fd is not None
        waits = [0] if root_fd is None else [root_fd] if watching else [0, root_fd]
        try:
            timeout = WATCH_INTERVAL_S if groups or watching else None
            ready, _, _ = select.select(waits, [], [], timeout)
        except InterruptedError:
            continue
        heard = False
        if root_fd is not None and root_fd in ready:
            os.close(root_fd)  # gpuopt has ended: what its pipe still holds is read now,
            root_fd = None  # and its end (a fork of it may hold the pipe open) awaited
        while True:
            try:
                chunk = os.read(0, 65536)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                chunk = b""
            if not chunk:
                ended = True
                break
            heard = True
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                parts = raw.decode("ascii", "replace").split()
                if len(parts) >= 2 and parts[1].isdigit():
                    if parts[0] == "+" and len(parts) == 3 and parts[2].isdigit():
                        groups[int(parts[1])] = int(parts[2])
                        note(f"G {parts[1]} {parts[2]}")
                    elif parts[0] == "-":
                        groups.pop(int(parts[1]), None)
        if ended:
            break
        if groups:
            for pid in _descendants(root):
                st = _stat(pid)
                if st is None or pid == guard_pid or st[0] in "ZX":
                    continue
                if st[2] == own_group:
                    continue  # gpuopt's own helpers (git), in its group: never a run's
                if (pid, st[4]) not in seen:
                    seen.add((pid, st[4]))
                    note(f"P {pid} {st[4]}")
    _kill_recorded(groups, seen)
    kill_owned(owner)
    if out is not None:
        out.close()
    if record is not None:
        try:
            os.unlink(record)
        except OSError:
            pass
    return 0


def _kill_each(pids: list[int]) -> list[int]:
    """SIGKILL each pid; the ones that were still there to kill."""
    killed = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except ProcessLookupError:
            pass
    return killed


# Last in the file: the guard runs it by path, so all it calls must be defined above.
if __name__ == "__main__" and sys.argv[1:2] == ["guard"]:
    raise SystemExit(_guard_main(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
