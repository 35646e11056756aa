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


def _module_setup(item: pytest.Item) -> str | None:
    """The module of a test that takes a module-scoped fixture (None for any other test).
    Such tests go to one worker, one after another, so that the fixture is made once: dealt
    out one by one, the four tests of the profile flow made its torch profile four times."""
    info = getattr(item, "_fixtureinfo", None)
    defs = getattr(info, "name2fixturedefs", None) or {}
    if any(d.scope == "module" for found in defs.values() for d in found):
        return str(item.nodeid).split("::", 1)[0]
    return None


def _units(items: list[pytest.Item]) -> list[list[pytest.Item]]:
    """The tests in units that must not be parted: those sharing a module fixture together
    (slow ones first, at the place of the first), every other test alone."""
    units: list[list[pytest.Item]] = []
    shared: dict[str, list[pytest.Item]] = {}
    for item in items:
        module = _module_setup(item)
        if module is None:
            units.append([item])
        elif module in shared:
            shared[module].append(item)
        else:
            shared[module] = [item]
            units.append(shared[module])
    for unit in units:
        unit.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable
    return units


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
      of them and no worker is left at the end with a minute-long test alone;
    - the tests of a module that share a module-scoped fixture are dealt as one (`_units`),
      so that one worker makes it once.

    The order depends only on the collection and the worker count, so every worker
    collects the same list, as xdist requires."""
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    slurm = [item for item in items if item.get_closest_marker("slurm") is not None]
    units = _units([item for item in items if item.get_closest_marker("slurm") is None])
    units.sort(key=lambda unit: unit[0].get_closest_marker("slow") is None)  # stable
    sizes = _xdist_shares(len(items), workers)
    parts: list[list[pytest.Item]] = [[] for _ in sizes]
    parts[0].extend(slurm)

    def room(part: int) -> int:
        return sizes[part] - len(parts[part])

    turn = 0
    for unit in units:  # in turn, to every part that has room left for the whole unit
        for _ in range(workers):
            if room(turn % workers) >= len(unit):
                break
            turn += 1
        else:  # none has (a late unit, or more Slurm tests than a part): spread it out
            for item in unit:
                turn = max(range(workers), key=room)
                parts[turn].append(item)
            continue
        parts[turn % workers].extend(unit)
        turn += 1
    items[:] = [item for part in parts for item in part]


@pytest.fixture
def unfrozen_heap() -> None:
    """For the tests that count frozen objects: the suite's own freeze given back
    (_freeze_what_lives_on), once no other thread of this worker is inside a measuring
    loop (measure.gc_control.frozen_heap). A loop of another thread still ending (an
    earlier app test's engine thread, say) would nest theirs in it. The tests still read
    counts against margins: a frozen temporary freed meanwhile lowers the count."""
    import gc
    import time

    from measure import gc_control

    end = time.monotonic() + 60.0
    while gc_control._frozen and time.monotonic() < end:
        time.sleep(0.01)
    assert gc_control._frozen == 0, "another thread stayed inside a measuring loop"
    gc.unfreeze()


def _freeze_what_lives_on() -> None:
    """Collect a finished test's garbage, then move what is still alive (imported modules:
    torch, textual, pydantic's schemas; the caches and fixtures that outlive a test) out
    of the cyclic collector's reach (gc.freeze). A pytest worker holds 240,000 such
    objects once torch and the app are imported, and each full collection walked them all:
    155 ms a collection, a fifth to a third of a worker's CPU in the TUI and torch tests
    (measured with gc.callbacks). Each collection now walks one test's objects. What a
    frozen object later drops is still freed by its reference count; only a reference
    cycle made before a freeze and broken after it stays (a module fixture's, at most once
    per module)."""
    import gc

    gc.collect()
    gc.freeze()


# The youngest generation collected every YOUNG_COLLECTION allocations, not Python's 700:
# Textual and pydantic allocate in torrents, and in the app and session tests (two workers)
# 42,000 young collections took 20 of 245 CPU-seconds; at 10,000 the same tests took 212
# CPU-seconds and 147 s against 165 s (gc.callbacks, /usr/bin/time). The product's own
# processes keep Python's setting: this is the test workers' alone, and a finished
# test's garbage is still collected before the next (_freeze_what_lives_on).
YOUNG_COLLECTION = 10_000


def pytest_collection_finish(session: pytest.Session) -> None:
    import gc

    gc.set_threshold(YOUNG_COLLECTION, *gc.get_threshold()[1:])
    _freeze_what_lives_on()


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    yield  # the test, its teardown, and pytest letting go of its fixtures' values
    _freeze_what_lives_on()
