"""A short run's end takes no sample that would only repeat the newest one: samples stay
at the sampler's rate (4 Hz in runs), not one per run of a short command (a thousand a
second, each a host read and a ledger row). A run with a process to read, or after a
quiet spell, still gets its own."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from measure.telemetry.monitor import TelemetryMonitor, make_monitor


@contextmanager
def held_owner() -> Iterator[TelemetryMonitor]:
    """A host-only monitor whose telemetry thread is held in on_sample, so that it takes
    no run's start: every start below is taken late, by the run's end."""
    held, release = threading.Event(), threading.Event()
    rows: list[object] = []

    def on_sample(_samples: object) -> None:
        if not held.is_set():
            held.set()
            release.wait(30)

    # a run period of 100 s: "the newest sample is younger than it" holds through any
    # slow spell of this machine
    mon = make_monitor(rows.extend, "s", gpu=False, on_sample=on_sample, run_hz=0.01)
    try:
        assert held.wait(30)  # held in on_sample of its first sample (taken at its start)
        yield mon
    finally:
        release.set()
        mon.close()


def reaped_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_reaped_runs_end_right_after_a_sample_takes_none() -> None:
    with held_owner() as mon:
        taken = mon.sampler.samples_taken
        mon.run_started("r1", reaped_pid())
        obs = mon.run_finished("r1")
        record = mon.last_record
        assert record is not None and record.run_id == "r1" and record.finished
        assert record.samples == [] and obs.deltas["host_samples"] == 0
        assert mon.sampler.samples_taken == taken  # no host read, no row for the ledger
        assert obs.deltas["host"]["rss_peak_bytes"] is None


def test_a_reaped_runs_end_after_a_quiet_spell_is_sampled() -> None:
    with held_owner() as mon:
        mon.sampler._sampled_at -= mon.sampler.run_period  # the newest is a period old
        mon.run_started("r1", reaped_pid())
        obs = mon.run_finished("r1")
        record = mon.last_record
        assert record is not None and len(record.samples) == 1
        assert record.samples[0].run_id == "r1" and obs.deltas["host_samples"] == 1
        # and the next short run, right after it, repeats nothing
        mon.run_started("r2", reaped_pid())
        mon.run_finished("r2")
        assert mon.last_record is not None and mon.last_record.samples == []


def test_a_run_whose_process_is_there_is_always_sampled() -> None:
    with held_owner() as mon:
        mon.run_started("r1", os.getpid())  # alive: its resident set is there to read
        obs = mon.run_finished("r1")
        record = mon.last_record
        assert record is not None and len(record.samples) == 1
        assert record.samples[0].rss_bytes and obs.deltas["host"]["rss_peak_bytes"]
