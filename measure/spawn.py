"""Start a run's process, as `subprocess.Popen` would, at a fraction of its Python cost.

A run of `true` cost gpuopt about 0.26 ms of CPU, 0.13 ms of it in Popen's Python side: the
environment encoded variable by variable (two `os.fsencode` calls each), its error pipe,
the Popen object. That is on the timed clock and between runs, where hyperfine -N spends
almost nothing. glibc's `posix_spawn` does the same work in C, with the same
`clone(CLONE_VFORK)` Popen uses. `os.posix_spawn` cannot change the directory or close
inherited descriptors (Python 3.11 has no such actions), so glibc is called through ctypes
with `posix_spawn_file_actions_addchdir_np` (glibc 2.29) and `addclosefrom_np` (2.34); no
library offers these. Where they are missing, or for anything unusual (a descriptor below
3, a NUL or `=` where it may not be), `spawn` uses Popen itself: the child is the same.

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
    """Does `spawn` start processes through glibc here (not through Popen)?"""
    return _GLIBC is not None


def _encode(text: str) -> bytes:
    return text.encode(_FS_ENCODING, _FS_ERRORS)


class Start:
    """One process to start, made ready (encoded, its file actions set) before `now()`
    starts it: a run's clock then holds the start itself, not gpuopt's preparation."""

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
        try:
            words = "\0".join(argv).encode(_FS_ENCODING, _FS_ERRORS).split(b"\0")
            entries = "\0".join(map("=".join, env.items())).encode(_FS_ENCODING, _FS_ERRORS)
            path, where = _encode(self.program), _encode(cwd)
        except UnicodeEncodeError:
            return
        env_list = entries.split(b"\0") if env else []
        if (
            len(words) != len(argv)
            or len(env_list) != len(env)
            or "=" in "".join(env)
            or "" in env
            or b"\0" in path + where
        ):
            return
        actions = ctypes.create_string_buffer(256)
        if glibc.fa_init(actions) != 0:
            return
        ok = (
            glibc.fa_dup2(actions, stdin, 0) == 0
            and glibc.fa_dup2(actions, stdout, 1) == 0
            and glibc.fa_dup2(actions, stderr, 2) == 0
            and glibc.fa_chdir(actions, where) == 0
            and glibc.fa_closefrom(actions, 3) == 0
        )
        if not ok:
            glibc.fa_destroy(actions)
            return
        c_argv = (ctypes.c_char_p * (len(words) + 1))(*words, None)
        c_env = (ctypes.c_char_p * (len(env_list) + 1))(*env_list, None)
        self._ready = (glibc, path, actions, c_argv, c_env)

    def now(self) -> int:
        """Start it; its pid (the caller reaps it). OSError if it cannot start, ValueError
        for an environment or argument that Popen refuses."""
        ready, self._ready = self._ready, None
        if ready is None:
            return _popen(*self.popen_args)
        glibc, path, actions, c_argv, c_env = ready
        pid = ctypes.c_int(0)
        try:
            err = glibc.spawn(ctypes.byref(pid), path, actions, glibc.attr, c_argv, c_env)
        finally:
            glibc.fa_destroy(actions)
        if err != 0:
            # As Popen names it: the directory when that is what is missing, else the program.
            missing_dir = err in (2, 20) and not os.path.isdir(self.cwd)  # ENOENT, ENOTDIR
            raise OSError(err, os.strerror(err), self.cwd if missing_dir else self.program)
        return pid.value

    def __del__(self) -> None:  # made ready, never started
        if self._ready is not None:
            self._ready[0].fa_destroy(self._ready[2])


def spawn(
    argv: Sequence[str],
    *,
    executable: str | None,
    cwd: str,
    env: Mapping[str, str],
    stdin: int,
    stdout: int,
    stderr: int,
) -> int:
    """Start the process at once; its pid (`Start` says the rest)."""
    return Start(
        argv, executable=executable, cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr
    ).now()


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
