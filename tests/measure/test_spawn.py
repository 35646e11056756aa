"""`measure.spawn` starts a run's process through glibc where it can: the child it makes
must be the one Popen made (the runner used Popen before; issue 21 cut its cost)."""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from measure import spawn

# What a run's process sees of how it was started.
PROBE = r"""
import json, os, sys
print(json.dumps({
    "argv": sys.argv[1:],
    "cwd": os.getcwd(),
    "env": {k: v for k, v in os.environ.items() if k != "LC_CTYPE"},
    "own_group": os.getpgid(0) == os.getpid(),
    "sid": os.getsid(0),
    "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
    "stdin": os.readlink("/proc/self/fd/0"),
}))
"""


def _glibc_at_least(major: int, minor: int) -> bool:
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return False
    got = tuple(int(p) for p in version.split(".")[:2])
    return name == "glibc" and got >= (major, minor)


def _start(how: str, argv: list[str], cwd: Path, env: dict[str, str], **kw: Any) -> int:
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    try:
        args = dict(executable=kw.get("executable"), cwd=str(cwd), env=env, stdin=null)
        if how == "glibc":
            return spawn.Start(argv, stdout=kw["out"], stderr=kw["out"], **args).now()  # type: ignore[arg-type]
        return spawn._popen(argv, stdout=kw["out"], stderr=kw["out"], **args)  # type: ignore[arg-type]
    finally:
        os.close(null)


def _seen(how: str, tmp_path: Path, argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    r, w = os.pipe()
    try:
        pid = _start(how, argv, tmp_path, env, out=w)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read()
    _, status, _ = os.wait4(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out
    seen: dict[str, Any] = json.loads(out)
    return seen


def test_glibc_starts_the_runs_where_it_has_the_actions() -> None:
    """The fast way is not lost quietly: on glibc 2.34 or later it is the one used."""
    if not _glibc_at_least(2, 34):
        pytest.skip("glibc older than 2.34 (or not glibc): Popen starts the runs")
    assert spawn.fast()


@pytest.mark.skipif(not spawn.fast(), reason="no glibc posix_spawn actions here")
def test_the_child_is_the_one_popen_made(tmp_path: Path) -> None:
    inherited = os.open(os.devnull, os.O_RDONLY)  # inheritable: close_fds must close it
    os.set_inheritable(inherited, True)
    try:
        env = {"PATH": "/usr/bin:/bin", "ODD": "a=b c\u00e9", "EMPTY": ""}
        argv = [sys.executable, "-c", PROBE, "two words", "é"]
        fast = _seen("glibc", tmp_path, argv, env)
        slow = _seen("popen", tmp_path, argv, env)
    finally:
        os.close(inherited)
    assert fast == slow
    assert fast["argv"] == ["two words", "é"] and fast["cwd"] == str(tmp_path)
    assert fast["env"] == env
    assert fast["own_group"] and fast["sid"] == os.getsid(0)
    assert fast["fds"] == [0, 1, 2, 3]  # 3: the listing's own
    assert fast["stdin"] == os.devnull


def _ignored_by(how: str, tmp_path: Path) -> int:
    """The signals a child that changes none (grep, not Python) starts ignoring."""
    r, w = os.pipe()
    try:
        pid = _start(how, ["/bin/grep", "SigIgn", "/proc/self/status"], tmp_path, {}, out=w)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as f:
        line = f.read().decode()
    os.wait4(pid, 0)
    return int(line.split()[1], 16)


@pytest.mark.skipif(not spawn.fast(), reason="no glibc posix_spawn actions here")
def test_the_signals_python_ignores_are_not_ignored_by_the_run(tmp_path: Path) -> None:
    """Python ignores SIGPIPE (and this test SIGXFSZ); an ignored signal stays ignored
    across exec, and a run writing to a closed pipe would then see EPIPE where it dies."""
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        fast, slow = _ignored_by("glibc", tmp_path), _ignored_by("popen", tmp_path)
    finally:
        signal.signal(signal.SIGXFSZ, previous)
    # glibc's spawn leaves its own two signals (32 and 33, below SIGRTMIN) ignored, as it
    # does for hyperfine's runs (Rust spawns through it too); no program may use them.
    internal = sum(1 << (sig - 1) for sig in range(32, signal.SIGRTMIN))
    assert fast & ~internal == slow
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not fast & (1 << (sig - 1)), sig


@pytest.mark.skipif(not spawn.fast(), reason="no glibc posix_spawn actions here")
def test_a_relative_program_is_found_in_the_directory(tmp_path: Path) -> None:
    prog = tmp_path / "bench"
    prog.write_text("#!/bin/sh\necho here\n")
    prog.chmod(0o755)
    r, w = os.pipe()
    try:
        pid = _start("glibc", ["./bench"], tmp_path, {}, out=w)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as f:
        assert f.read() == b"here\n"
    assert os.waitstatus_to_exitcode(os.wait4(pid, 0)[1]) == 0


@pytest.mark.parametrize("missing", ["program", "directory"])
def test_what_cannot_start_is_named_as_popen_names_it(tmp_path: Path, missing: str) -> None:
    program = str(tmp_path / "no-such-program") if missing == "program" else "/bin/true"
    where = tmp_path / "no-such-dir" if missing == "directory" else tmp_path
    errors = []
    sink = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)  # not 0-2: those go to Popen
    try:
        for how in ("glibc", "popen"):
            with pytest.raises(OSError) as caught:
                _start(how, [program], where, {}, out=sink)
            errors.append((caught.value.errno, caught.value.filename))
    finally:
        os.close(sink)
    assert errors[0] == errors[1]
    assert errors[0] == (errno.ENOENT, program if missing == "program" else str(where))


@pytest.mark.parametrize(
    "env, argv",
    [({"A=B": "x"}, ["/bin/true"]), ({"A": "x\0y"}, ["/bin/true"]), ({}, ["/bin/true", "a\0b"])],
)
def test_what_popen_refuses_is_refused(
    tmp_path: Path, env: dict[str, str], argv: list[str]
) -> None:
    """A NUL would cut a C string short: the run must not start with half of it."""
    sink = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    try:
        with pytest.raises(ValueError):
            _start("glibc", argv, tmp_path, env, out=sink)
    finally:
        os.close(sink)


@pytest.mark.skipif(not spawn.fast(), reason="no glibc posix_spawn actions here")
def test_what_is_kept_between_starts_never_leaks_into_the_next(tmp_path: Path) -> None:
    """The C arrays and file actions are kept between starts and remade when they differ:
    each child still sees its own environment, mark, words, directory and output."""
    other = tmp_path / "other"
    other.mkdir()
    cases = [
        (tmp_path, {"A": "1", "MARK": "m1"}, ["one"]),
        (tmp_path, {"A": "1", "MARK": "m2"}, ["one"]),  # the mark alone differs
        (other, {"A": "1", "MARK": "m3"}, ["two", "words"]),
        (tmp_path, {"A": "2"}, ["one"]),  # no mark at all
        (tmp_path, {"A": "1", "MARK": "m5"}, ["one"]),  # back to a kept one
    ]
    for cwd, env, words in cases:
        assert _kept_start(cwd, env, words) == (str(cwd), env, words)
    # One dict changed in place between starts: a kept environment is found by its
    # variables, never by the object, so each start sees the variables as they are then.
    shared = {"A": "1", "MARK": "m6"}
    for change in ({}, {"A": "3"}, {"B": "x"}, {"MARK": "m7"}):
        shared.update(change)
        assert _kept_start(tmp_path, shared, ["one"]) == (str(tmp_path), shared, ["one"])


def _kept_start(cwd: Path, env: dict[str, str], words: list[str]) -> tuple[str, Any, Any]:
    """What a child started by Start (MARK varying) saw: its directory, env and words."""
    r, w = os.pipe()
    try:
        pid = spawn.Start(
            [sys.executable, "-c", PROBE, *words], executable=None, cwd=str(cwd),
            env=env, stdin=w, stdout=w, stderr=w, vary="MARK",
        ).now()  # fmt: skip
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as f:
        seen = json.loads(f.read())
    os.wait4(pid, 0)
    return seen["cwd"], seen["env"], seen["argv"]


@pytest.mark.skipif(not spawn.fast(), reason="no glibc posix_spawn actions here")
@pytest.mark.parametrize(
    "kept, refused",
    [
        (({"A": "1", "B": "2"}, ["/bin/true"]), ({"A": "1\0B=2"}, ["/bin/true"])),
        (({"A": "1="}, ["/bin/true"]), ({"A=1": ""}, ["/bin/true"])),
        (({}, ["/bin/true", "a", "b"]), ({}, ["/bin/true", "a\0b"])),
    ],
)
def test_what_popen_refuses_is_refused_after_what_it_would_look_like(
    tmp_path: Path,
    kept: tuple[dict[str, str], list[str]],
    refused: tuple[dict[str, str], list[str]],
) -> None:
    """Kept arrays are found by their encoded bytes: a NUL or an '=' where none may be
    gives the same bytes as a valid start made before it. It is still refused, not
    started with the earlier one's variables or words."""
    sink = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    try:
        pid = _start("glibc", kept[1], tmp_path, kept[0], out=sink)
        os.wait4(pid, 0)
        with pytest.raises(ValueError):
            _start("glibc", refused[1], tmp_path, refused[0], out=sink)
    finally:
        os.close(sink)
