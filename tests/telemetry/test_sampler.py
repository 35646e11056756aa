"""The sampler thread with real time: cadence, batching, ownership of the GPU calls."""

from __future__ import annotations

import itertools
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ledger import Ledger
from measure.telemetry import make_monitor
from measure.telemetry.replay import load_scenario


@pytest.mark.slow
def test_four_hertz_in_runs_one_hertz_idle_batched_to_the_ledger(tmp_path: Path) -> None:
    writer_ledger = Ledger.open(tmp_path / "l.db")
    calls: list[tuple[str, int]] = []

    def sink(rows: list[tuple[Any, ...]]) -> None:
        calls.append((threading.current_thread().name, len(rows)))
        writer_ledger.insert_samples(rows)

    seen: list[str] = []
    monitor = make_monitor(
        sink, "sess", scenario="clean",
        on_sample=lambda s: seen.append(threading.current_thread().name),
    )  # fmt: skip
    time.sleep(2.2)  # idle: about 1 Hz
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2.0)"])
    monitor.run_started("run1", child.pid)
    child.wait()
    obs = monitor.run_finished("run1")
    time.sleep(0.3)
    monitor.close()
    lib = monitor.sampler.gpu.replay_lib

    rows = Ledger.open(tmp_path / "l.db").samples(session_id="sess")
    assert len(rows) == monitor.sampler.samples_taken * 2  # one GPU row, one host row each
    run = [r for r in rows if r.run_id == "run1" and r.gpu == 0]
    idle_before = [r for r in rows if r.run_id is None and r.gpu == 0 and r.t_us < run[0].t_us]
    assert 2 <= len(idle_before) <= 4, len(idle_before)
    assert 7 <= len(run) <= 11, len(run)  # 2 s at 4 Hz, plus the start and end samples
    gaps = [(b.t_us - a.t_us) / 1e6 for a, b in itertools.pairwise(run)][:-1]
    assert 0.2 <= statistics.median(gaps) <= 0.32, gaps
    assert obs.deltas["started_us"] <= run[0].t_us and run[-1].t_us <= obs.deltas["ended_us"]
    assert obs.trust == "clean"
    host = [r for r in rows if r.run_id == "run1" and r.source == "host"]
    assert any(r.rss_bytes and r.rss_bytes > 1_000_000 for r in host)  # the child's RSS
    # batches, about once a second, from the writer thread
    assert {name for name, _ in calls} == {"gpuopt-telemetry-writer"}
    assert len(calls) <= 8 and max(n for _, n in calls) >= 4
    # every NVML call and every on_sample from the one owner thread
    assert lib.threads == {"gpuopt-telemetry"}
    assert set(seen) == {"gpuopt-telemetry"}
    assert monitor.sampler.cpu_s > 0


def test_a_failing_sink_loses_no_row() -> None:
    got: list[tuple[Any, ...]] = []
    failures = [2]

    def sink(rows: list[tuple[Any, ...]]) -> None:
        if failures[0]:
            failures[0] -= 1
            raise OSError("database is locked")
        got.extend(rows)

    monitor = make_monitor(sink, "s", scenario="clean", start=False)
    for _ in range(3):
        monitor.tick()
        monitor.flush()
    assert monitor.sampler.sink_error == ""
    monitor.close()
    assert len(got) == 6
    assert [r[2] for r in got] == sorted(r[2] for r in got)  # kept in time order


def test_close_flushes_pending_rows_and_stops_the_threads() -> None:
    got: list[tuple[Any, ...]] = []
    monitor = make_monitor(got.extend, "s", scenario="clean", flush_s=60)
    monitor.run_started("r", os.getpid())
    time.sleep(0.6)
    monitor.run_finished("r")
    monitor.close()
    assert len(got) == monitor.sampler.samples_taken * 2 >= 4
    assert not monitor.sampler.running
    names = {t.name for t in threading.enumerate()}
    assert "gpuopt-telemetry" not in names and "gpuopt-telemetry-writer" not in names


def test_a_failing_callback_does_not_stop_sampling() -> None:
    def boom(samples: list[Any]) -> None:
        raise RuntimeError("widget gone")

    monitor = make_monitor(None, None, scenario="clean", on_sample=boom, start=False)
    monitor.tick()
    monitor.tick()
    monitor.close()
    assert monitor.sampler.samples_taken == 2
    assert "widget gone" in monitor.sampler.callback_error


def test_process_tree_and_foreign_processes(tmp_path: Path) -> None:
    """A pid of the run's own tree is not foreign; a visible stranger is; an invisible pid
    that appears mid-run (another PID namespace) is kept aside, not warned about."""
    script = (
        "import subprocess, sys; "
        "subprocess.run([sys.executable, '-c', 'import time; time.sleep(60)'])"
    )
    child = subprocess.Popen([sys.executable, "-c", script])
    import psutil

    deadline = time.monotonic() + 120  # the grandchild's start is the event; this bounds it
    while not psutil.Process(child.pid).children() and time.monotonic() < deadline:
        time.sleep(0.02)
    grandchild = psutil.Process(child.pid).children()[0].pid
    stranger = os.getpid()
    sc = load_scenario("clean")
    sc = dict(sc, events=[
        {"runs": "all", "gpu": 0, "processes": [grandchild, stranger]},
        {"runs": "all", "ticks": [4, None], "gpu": 0, "processes": [grandchild, stranger, 4194302]},
    ])  # fmt: skip
    monitor = make_monitor(None, "s", scenario=sc, start=False)
    monitor.run_started("r", child.pid)
    for _ in range(5):
        monitor.tick()
    obs = monitor.run_finished("r")
    monitor.close()
    psutil.Process(grandchild).kill()
    child.kill()
    child.wait()
    gpu = obs.deltas["gpus"]["0"]
    assert [p["pid"] for p in gpu["foreign_processes"]] == [stranger]
    assert gpu["unattributed_processes"] == [4194302]
    assert obs.trust == "warn"
    assert obs.reasons == [
        f"another process on the GPU: pid {stranger} ({psutil.Process().name()})"
    ]
    host = [s for s in monitor.last_record.samples if s.source == "host"]
    assert all(s.rss_bytes and s.rss_bytes > 2_000_000 for s in host)
