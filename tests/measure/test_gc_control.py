"""Python's garbage collector off the runs' clocks (measure.gc_control): no collection
starts inside a run's timed window, the measuring loops freeze what existed before them,
and the collector is never left off, by a long run, a failed start, or two threads."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from measure import gc_control
from measure.runner import RunStatus, run_command


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    assert gc_control._paused == {} and gc_control._frozen == 0
    if not was:
        gc.disable()


def test_no_collection_can_start_on_a_runs_clock(tmp_path: Path) -> None:
    seen: list[bool] = []
    res = run_command(
        "true", tmp_path, shell=None, on_start=lambda pid: seen.append(gc.isenabled())
    )
    assert res.status is RunStatus.OK
    assert seen == [False]  # on_start is called while the run's clock runs
    assert gc.isenabled()


def test_a_command_that_cannot_start_leaves_the_collector_on(tmp_path: Path) -> None:
    res = run_command("/nonexistent/program", tmp_path, shell=None)
    assert res.status is RunStatus.FAILED
    assert gc.isenabled()


def test_a_long_run_turns_collection_back_on_before_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past LONGEST_PAUSE_S the run's wait turns the collector on: the child waits on a
    FIFO that is written only once the collector is seen on, so the run ends OK only if
    that happened while it ran (else it times out)."""
    monkeypatch.setattr(gc_control, "LONGEST_PAUSE_S", 0.05)
    monkeypatch.setattr("measure.runner.SIGNAL_CHECK_S", 0.02)  # the wait loop's wake-up
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    on_during_run = threading.Event()

    def watch(pid: int) -> None:
        def wait_for_collector() -> None:
            while not gc.isenabled():
                threading.Event().wait(0.005)
            on_during_run.set()
            fifo.write_text("go\n")

        threading.Thread(target=wait_for_collector, daemon=True).start()

    res = run_command(f"cat {fifo}", tmp_path, shell=None, on_start=watch, timeout_s=20)
    assert res.status is RunStatus.OK, res.error
    assert on_during_run.is_set() and gc.isenabled()


def test_pauses_from_two_threads_keep_it_off_until_the_last_ends() -> None:
    first, second = gc_control.Pause(), gc_control.Pause()
    assert not gc.isenabled()
    first.end()
    assert not gc.isenabled()  # the second run's clock still runs
    second.end()
    second.end()  # twice: no effect
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_program_stays_off() -> None:
    gc.disable()
    with gc_control.paused():
        pass
    assert not gc.isenabled()
    gc.enable()


# The counts below are read against margins of many objects, never for equality: freezing
# also takes the temporaries alive at that moment (another thread's, say), and one freed by
# its reference count leaves the frozen set, so the count can fall by a few between two
# reads with nothing given back (a four-worker suite saw 687,137 after 687,169).
CHUNK = 20_000  # objects: far beyond what temporaries dying can take off a count


@pytest.mark.usefixtures("unfrozen_heap")
def test_a_measuring_loop_freezes_what_existed_before_it_and_gives_it_back() -> None:
    existing = [[] for _ in range(CHUNK)]
    with gc_control.frozen_heap():
        frozen = gc.get_freeze_count()
        assert frozen >= CHUNK  # what existed before the loop
        made_inside = [[] for _ in range(CHUNK)]
        with gc_control.frozen_heap():  # nested (a round inside the app's job): one freeze
            assert gc.get_freeze_count() < frozen + CHUNK  # what the loop made stays out
        assert gc.get_freeze_count() < frozen + CHUNK
    assert gc.get_freeze_count() == 0  # all given back
    assert existing and made_inside


@pytest.mark.usefixtures("unfrozen_heap")
def test_a_heap_the_program_froze_stays_frozen_after_a_loop() -> None:
    programs = [[] for _ in range(CHUNK)]
    gc.freeze()  # the program's own, before any loop
    with gc_control.frozen_heap():
        assert gc.get_freeze_count() >= CHUNK
    assert gc.get_freeze_count() >= CHUNK  # not given back: an unfreeze leaves none
    assert programs


@pytest.mark.usefixtures("unfrozen_heap")
def test_a_freed_frozen_object_leaves_the_count_without_any_unfreeze() -> None:
    # Why the tests above compare against margins: the count is not a fixed quantity.
    temporary = [[] for _ in range(100)]
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        del temporary
        assert gc.get_freeze_count() <= before - 100
    finally:
        gc.unfreeze()
