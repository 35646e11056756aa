"""The per-run telemetry hand-off: what each run pays on its critical path (a sample at
its start and at its end) stays small, and no sample loses a field by it."""

from __future__ import annotations

import os

import psutil

from measure.telemetry import host as host_module
from measure.telemetry.host import HostBackend
from measure.telemetry.monitor import make_monitor


def test_host_memory_is_read_once_per_period_and_still_in_every_sample(monkeypatch):
    calls = []
    real = psutil.virtual_memory

    def counted():
        calls.append(1)
        return real()

    monkeypatch.setattr(host_module.psutil, "virtual_memory", counted)
    backend = HostBackend()
    samples = [backend.read(0, "r") for _ in range(20)]  # well within one period
    assert len(calls) == 1
    assert all(s.extra["host_mem_total_bytes"] == real().total for s in samples)
    assert all(0 < s.extra["host_mem_used_bytes"] <= real().total for s in samples)
    backend._mem_at -= host_module.MEMORY_EVERY_S  # the period has passed: read afresh
    backend.read(0, "r")
    assert len(calls) == 2


def test_a_run_hand_off_reads_host_memory_at_most_once(monkeypatch):
    calls = []
    real = psutil.virtual_memory

    def counted():
        calls.append(1)
        return real()

    monkeypatch.setattr(host_module.psutil, "virtual_memory", counted)
    mon = make_monitor(None, "s", gpu=False)
    try:
        mon.run_started("r1", os.getpid())
        obs = mon.run_finished("r1")
    finally:
        mon.close()
    record = mon.last_record
    # its end's sample: the start, taken by the end, adds no twin of it
    assert record is not None and len(record.samples) == 1
    assert all("host_mem_used_bytes" in s.extra for s in record.samples)
    assert all(s.rss_bytes for s in record.samples)  # the run's own tree is still followed
    assert len(calls) <= 2 and obs.trust is not None  # was two per run, plus idle samples


def test_a_reaped_run_is_not_looked_up_and_has_no_rss(monkeypatch):
    """A short run is reaped before its start is handed over: psutil would raise for it
    (~0.1 ms a run); the host sees no /proc entry and follows nothing."""
    import subprocess
    import sys

    made = []
    real = psutil.Process

    def counted(*a, **k):
        made.append(a)
        return real(*a, **k)

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    monkeypatch.setattr(host_module.psutil, "Process", counted)
    backend = HostBackend()
    backend.follow(p.pid)
    assert made == [] and backend.read(1, "r").rss_bytes is None
    backend.follow(os.getpid())  # a live one is still followed
    assert len(made) == 1 and backend.read(2, "r").rss_bytes


def test_core_frequencies_are_read_once_per_period_and_kept_in_every_sample(monkeypatch):
    backend = HostBackend()
    calls = []

    def freqs():
        calls.append(1)
        return [1000.0]

    monkeypatch.setattr(backend, "_core_freqs", freqs)
    samples = [backend.read(0, "r") for _ in range(20)]  # well within one period
    assert len(calls) == 1
    assert all(s.extra["core_mhz"] == [1000.0] for s in samples)
    backend._freq_at -= host_module.FREQ_EVERY_S  # the period has passed: read afresh
    backend.read(0, "r")
    assert len(calls) == 2
