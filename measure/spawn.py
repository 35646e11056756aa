"""Start a run's process, as `subprocess.Popen` would, at a fraction of its Python cost.

A run of `true` cost gpuopt about 0.26 ms of CPU, 0.13 ms of it in Popen's Python side: the
environment encoded variable by variable (two `os.fsencode` calls each), its error pipe,
the Popen object. That is on the timed clock and between runs, where hyperfine -N spends
almost nothing. glibc's `posix_spawn` does the same work in C, with the same
`clone(CLONE_VFORK)` Popen uses. `os.posix_spawn` cannot change the directory or close
inherited descriptors (Python 3.11 has no such actions), so glibc is called through ctypes
with `posix_spawn_file_actions_addchdir_np` (glibc 2.29) and `addclosefrom_np` (2.34); no
library offers these. Where they are missing, or for anything unusual (a descriptor below
3, a NUL or `=` where it may not be), `Start` uses Popen itself: the child is the same.

The child gets what `Popen(argv, executable=, cwd=, env=, stdin=, stdout=, stderr=,
process_group=0, close_fds=True)` gives it: its own process group, the directory, exactly
`env`, the three descriptors and no other, and SIGPIPE and SIGXFSZ at their defaults (Popen's
`restore_signals`; Python ignores SIGPIPE, and an ignored signal stays ignored across exec).
One difference, glibc's own: its two internal signals (32 and 33, below SIGRTMIN, which no
program may use) start ignored, as in every process hyperfine starts (Rust spawns so too).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

_FS_ENCODING = sys.getfilesystemencoding()
_FS_ERRORS = sys.getfilesystemencodeerrors()
_SETPGROUP, _SETSIGDEF = 0x02, 0x04  # POSIX_SPAWN_* flags (glibc's spawn.h)


class _Glibc:
    """The posix_spawn calls a run needs, and an attribute object made once."""

    def __init__(self, libc: ctypes.CDLL) -> None:
        self.spawn = libc.posix_spawn
        self.fa_init = libc.posix_spawn_file_actions_init
        self.fa_destroy = libc.posix_spawn_file_actions_destroy
        self.fa_dup2 = libc.posix_spawn_file_actions_adddup2
        self.fa_chdir = libc.posix_spawn_file_actions_addchdir_np
        self.fa_closefrom = libc.posix_spawn_file_actions_addclosefrom_np
        # Opaque glibc structures, given more room than they take (80, 336 and 128 bytes
        # on x86-64 and aarch64).
        self.attr = ctypes.create_string_buffer(1024)
        sigdef = ctypes.create_string_buffer(256)
        ok = libc.posix_spawnattr_init(self.attr) == 0 and libc.sigemptyset(sigdef) == 0
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            ok = ok and libc.sigaddset(sigdef, int(sig)) == 0
        ok = ok and libc.posix_spawnattr_setsigdefault(self.attr, sigdef) == 0
        ok = ok and libc.posix_spawnattr_setpgroup(self.attr, 0) == 0
        flags = ctypes.c_short(_SETPGROUP | _SETSIGDEF)
        if not (ok and libc.posix_spawnattr_setflags(self.attr, flags) == 0):
            raise OSError("posix_spawnattr could not be set up")


def _load() -> _Glibc | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return _Glibc(ctypes.CDLL(None, use_errno=True))
    except (OSError, AttributeError):  # not glibc, or older than 2.34
        return None


_GLIBC = _load()


def fast() -> bool:
    """Does `Start` start processes through glibc here (not through Popen)?"""
    return _GLIBC is not None


def _encode(text: str) -> bytes:
    return text.encode(_FS_ENCODING, _FS_ERRORS)


class _Actions:
    """A posix_spawn_file_actions_t, given back to glibc when dropped."""

    def __init__(self, glibc: _Glibc) -> None:
        self.glibc = glibc
        self.buf = ctypes.create_string_buffer(256)
        self.made = glibc.fa_init(self.buf) == 0

    def __del__(self) -> None:
        if self.made:
            self.glibc.fa_destroy(self.buf)


class _Kept(threading.local):
    """What one thread made for earlier starts, made again only when it differs: a run's
    file actions (its pipes get the same numbers run after run) and the C arrays of its
    words and environment (the same but for the run's mark). Building them cost a fresh
    run about 45 µs, more than the Popen they replace."""

    def __init__(self) -> None:
        self.actions: dict[tuple[int, int, int, bytes], _Actions] = {}
        self.words: dict[bytes, Any] = {}
        self.env: dict[bytes, tuple[Any, int]] = {}  # the rest -> (array, the slot that varies)
        # The same, found by the variables themselves: comparing two dicts whose strings
        # are the same objects (a round's runs) costs less than joining and encoding them.
        self.env_seen: list[tuple[dict[str, str], tuple[Any, int]]] = []


_kept = _Kept()
_KEEP = 8  # of each kind, per thread


def _keep(table: dict[Any, Any], key: Any, value: Any) -> None:
    while len(table) >= _KEEP:
        del table[next(iter(table))]  # the oldest
    table[key] = value


class Start:
    """One process to start, made ready (encoded, its file actions set) before `now()`
    starts it: a run's clock then holds the start itself, not gpuopt's preparation.
    `vary`: the one variable whose value changes from run to run (the run's mark). Start
    one before making the next in the same thread: they share what is kept."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        executable: str | None,
        cwd: str,
        env: Mapping[str, str],
        stdin: int,
        stdout: int,
        stderr: int,
        vary: str | None = None,
    ) -> None:
        self.popen_args = (argv, executable, cwd, env, stdin, stdout, stderr)
        self.program = executable if executable is not None else argv[0]
        self.cwd = cwd
        self._ready: tuple[Any, ...] | None = None  # None: Popen starts it
        glibc = _GLIBC
        if glibc is None or min(stdin, stdout, stderr) < 3 or "/" not in self.program:
            return
        # Encoded in one piece and split at the NULs: C loops, not two calls per variable.
        # A NUL inside a word or variable would split it once more: Popen refuses that.
        rest = dict(env)
        varying = rest.pop(vary, None) if vary is not None else None
        found = next((made for seen, made in _kept.env_seen if seen == rest), None)
        try:
            joined = "\0".join(argv).encode(_FS_ENCODING, _FS_ERRORS)
            entries = (
                b""
                if found is not None
                else "\0".join(map("=".join, rest.items())).encode(_FS_ENCODING, _FS_ERRORS)
            )
            last = [] if varying is None else [_encode(f"{vary}={varying}")]
            path, where = _encode(self.program), _encode(cwd)
        except UnicodeEncodeError:
            return
        # What Popen refuses (a NUL anywhere, an '=' or nothing as a name) is refused before
        # a kept array is looked up by its bytes: "A=1\0B=2" as one variable encodes as A
        # and B do, and would start with theirs.
        if any(b"\0" in b for b in (path, where, *last)) or any("\0" in w for w in argv):
            return
        if found is None and (
            "" in rest or any("=" in k or "\0" in k or "\0" in v for k, v in rest.items())
        ):
            return
        c_argv = _kept.words.get(joined)
        if c_argv is None:
            words = joined.split(b"\0")
            c_argv = (ctypes.c_char_p * (len(words) + 1))(*words, None)
            _keep(_kept.words, joined, c_argv)
        if found is None:
            found = _kept.env.get(entries)
            if found is None:
                env_list = entries.split(b"\0") if rest else []
                c_env = (ctypes.c_char_p * (len(env_list) + 2))(*env_list, None, None)
                found = (c_env, len(env_list))
                _keep(_kept.env, entries, found)
            if len(_kept.env_seen) >= _KEEP:
                del _kept.env_seen[0]  # the oldest
            _kept.env_seen.append((rest, found))
        c_env, slot = found
        c_env[slot] = last[0] if last else None  # ctypes keeps the bytes alive with it
        key = (stdin, stdout, stderr, where)
        actions = _kept.actions.get(key)
        if actions is None:
            actions = _Actions(glibc)
            ok = (
                actions.made
                and glibc.fa_dup2(actions.buf, stdin, 0) == 0
                and glibc.fa_dup2(actions.buf, stdout, 1) == 0
                and glibc.fa_dup2(actions.buf, stderr, 2) == 0
                and glibc.fa_chdir(actions.buf, where) == 0
                and glibc.fa_closefrom(actions.buf, 3) == 0
            )
            if not ok:
                return
            _keep(_kept.actions, key, actions)
        self._ready = (glibc, path, actions, c_argv, c_env)

    def now(self) -> int:
        """Start it; its pid (the caller reaps it). OSError if it cannot start, ValueError
        for an environment or argument that Popen refuses."""
        ready, self._ready = self._ready, None
        if ready is None:
            return _popen(*self.popen_args)
        glibc, path, actions, c_argv, c_env = ready
        pid = ctypes.c_int(0)
        err = glibc.spawn(ctypes.byref(pid), path, actions.buf, glibc.attr, c_argv, c_env)
        if err != 0:
            # As Popen names it: the directory when that is what is missing, else the program.
            missing_dir = err in (2, 20) and not os.path.isdir(self.cwd)  # ENOENT, ENOTDIR
            raise OSError(err, os.strerror(err), self.cwd if missing_dir else self.program)
        return pid.value


def _popen(
    argv: Sequence[str],
    executable: str | None,
    cwd: str,
    env: Mapping[str, str],
    stdin: int,
    stdout: int,
    stderr: int,
) -> int:
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        # A process group of its own (a timeout kills the group), not a session: where
        # the kernel groups scheduling by session (autogroup), a new session per run
        # made a scheduling group per run, and on a loaded machine its start waited
        # (2.6 ms against 0.9 ms, median, at load 12 on 2 cores).
        process_group=0,
        close_fds=True,
        executable=executable,
    )
    proc.returncode = 0  # the caller reaps it: Popen must never wait for it
    return proc.pid
