"""Shared test fixtures (keep this file tiny)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

# CI replays the same examples every run (a red CI must mean a change broke something);
# a developer's run explores new ones and keeps failures in .hypothesis/.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def _stop_signals_as_a_person_starts_it() -> None:
    """Run under nohup, or as a background job of a script, the suite inherits SIGHUP or
    SIGINT ignored, and so would every gpuopt a test starts. gpuopt keeps ignoring a signal
    it was started ignoring (nohup's request), so the tests that send it HUP or Ctrl+C
    waited for nothing: two loaded runs started with `nohup … &` failed the same 6 signal
    tests. The tests are of gpuopt as a person starts it, in a terminal."""
    import signal

    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_stop_signals_as_a_person_starts_it()


def _keep_compiled_code() -> None:
    """With PYTHONDONTWRITEBYTECODE set (this VM's shell sets it), every gpuopt process a
    test starts compiled gpuopt's sources anew, and every pytest worker rewrote every test
    module's asserts anew (8 of its 9 s of collection). A person's machine keeps the
    compiled files; so does the suite. gpuopt sets it itself for what it runs in the
    person's tree (its workers), which the tests of an untouched tree hold."""
    import sys

    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


_keep_compiled_code()


def _one_thread_per_worker() -> None:
    """The suite's parallelism is its xdist workers, one process each, more of them than
    cores (many tests wait on subprocesses, Slurm or a pid file). torch's own thread pool
    on top of that oversubscribes the cores, and its OpenMP threads spin while they wait
    for work: four workers on 2 cores spent 223 s of CPU in the torch tests, against 116 s
    for two. A test that is about threads sets them itself (monkeypatch), as a person's
    environment would."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")


_one_thread_per_worker()

GIT_ID = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}  # fmt: skip


def run_git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ID}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def make_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """A factory for git repositories with one commit; worktrees go under tmp_path."""
    monkeypatch.setenv("GPUOPT_WORKTREES", str(tmp_path / "worktrees"))

    def make(name: str = "repo", files: dict[str, str] | None = None) -> Path:
        repo = tmp_path / name
        repo.mkdir()
        run_git(repo, "init", "-q", "-b", "main")
        for rel, text in (files or {"README": "hello\n"}).items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text)
        run_git(repo, "add", "-A")
        run_git(repo, "commit", "-q", "-m", "first")
        return repo

    return make


def _xdist_shares(total: int, workers: int) -> list[int]:
    """The sizes of the parts xdist's work stealing first hands its workers, in order
    (xdist/scheduler/worksteal.py: each idle worker gets what is left over the workers
    left)."""
    sizes = []
    for left in range(workers, 0, -1):
        sizes.append((total - sum(sizes)) // left)
    return sizes


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the tests for xdist's work stealing, which first hands each worker one part
    of this list, in order, and then lets an idle worker take the far end of another's
    queue:

    - the Slurm tests first, together: in a whole run they fall in the first part, so they
      wait on the one-node cluster (a time limit is a minute at least) in one worker while
      the others compute (the `slurm` fixture also holds a lock, so that they never run
      two at once however they are spread);
    - then the slow tests are dealt out in turn, so that every part starts with its share
      of them and no worker is left at the end with a minute-long test alone.

    The order depends only on the collection and the worker count, so every worker
    collects the same list, as xdist requires."""
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    slurm = [item for item in items if item.get_closest_marker("slurm") is not None]
    rest = [item for item in items if item.get_closest_marker("slurm") is None]
    rest.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable
    sizes = _xdist_shares(len(items), workers)
    parts: list[list[pytest.Item]] = [[] for _ in sizes]
    parts[0].extend(slurm)
    turn = 0
    for item in rest:  # in turn, to every part that has room left
        for _ in range(workers):
            if len(parts[turn % workers]) < sizes[turn % workers]:
                break
            turn += 1
        else:  # none has (more Slurm tests than the first part holds): the last takes it
            turn = workers - 1
        parts[turn % workers].append(item)
        turn += 1
    items[:] = [item for part in parts for item in part]
