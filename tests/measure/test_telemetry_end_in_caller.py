"""A run's end does not wait for the telemetry thread to wake when it needs no GPU call
(host telemetry only): the round's run pays no thread hand-off for it. With a GPU the end
is still taken by the one thread that owns every GPU call, and on_sample always comes from
that thread."""

from __future__ import annotations

import os
import threading

from measure.telemetry.monitor import make_monitor


def test_a_host_only_run_end_is_taken_while_the_telemetry_thread_is_held_up() -> None:
    held = threading.Event()
    release = threading.Event()
    names: list[str] = []

    def on_sample(_samples: object) -> None:
        names.append(threading.current_thread().name)
        if not held.is_set():
            held.set()
            release.wait(30)  # the owner thread is held here until the run has ended

    mon = make_monitor(None, "s", gpu=False, on_sample=on_sample)
    try:
        # its first sample, taken as it starts: the owner thread now sits in on_sample (a
        # tick() here waited 5 s for that held thread, and gave up)
        assert held.wait(30)
        mon.run_started("r1", os.getpid())
        obs = mon.run_finished("r1")  # was: waited for the held owner, then no record
        record = mon.last_record
        assert record is not None and record.run_id == "r1" and record.finished
        # its end's sample alone: its start, taken by the end, adds no twin of it (two
        # samples of one moment were a host read and a ledger row more per short run)
        assert len(record.samples) == 1 and record.samples[0].run_id == "r1"
        assert obs.deltas["host_samples"] == 1
    finally:
        release.set()
        mon.close()
    assert set(names) == {"gpuopt-telemetry"}  # on_sample: the owner thread's alone


def test_with_a_gpu_the_end_stays_with_the_owner_thread() -> None:
    mon = make_monitor(None, "s", scenario="clean")
    try:
        assert mon.status == "ok"
        mon.run_started("r1", os.getpid())
        obs = mon.run_finished("r1")
    finally:
        mon.close()
    lib = mon.sampler.gpu.replay_lib  # type: ignore[union-attr]
    assert lib.threads == {"gpuopt-telemetry"}
    assert obs.trust is not None and mon.last_record is not None


def test_a_host_only_run_start_wakes_no_thread_and_a_long_run_is_still_followed() -> None:
    held = threading.Event()
    release = threading.Event()
    in_run = threading.Event()

    def on_sample(samples: list) -> None:  # type: ignore[type-arg]
        if any(s.run_id == "r2" for s in samples):
            in_run.set()
        if not held.is_set():
            held.set()
            release.wait(30)

    mon = make_monitor(None, "s", gpu=False, on_sample=on_sample)
    try:
        mon.sampler.wait_ready()
        assert held.wait(30)  # the owner thread is held in on_sample (its first sample)
        queued = mon.sampler._commands.qsize()
        mon.run_started("r1", os.getpid())
        assert mon.sampler._commands.qsize() == queued  # nothing handed to it (was: one)
        mon.run_finished("r1")
        assert mon.last_record is not None and len(mon.last_record.samples) == 1
        release.set()
        # a run that lasts: the owner takes its start at its next tick and follows it
        mon.run_started("r2", os.getpid())
        assert in_run.wait(30)
        mon.run_finished("r2")
        record = mon.last_record
        assert record is not None and record.run_id == "r2" and len(record.samples) >= 2
    finally:
        release.set()
        mon.close()
