"""The host backend on real processes, and the package's contracts with its neighbours."""

from __future__ import annotations

import subprocess
import sys
import time

from measure.telemetry.backend import COLUMNS, Sample, decode_reasons
from measure.telemetry.host import HostBackend

ALLOC = """
import subprocess, sys, time
block = bytearray(64 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
subprocess.run([sys.executable, "-c", "import time; time.sleep(300)"])
"""


def test_host_reads_the_rss_of_the_whole_process_tree() -> None:
    import psutil

    child = subprocess.Popen([sys.executable, "-c", ALLOC])
    try:
        host = HostBackend()
        host.follow(child.pid)
        # the grandchild's start is the event (it lives until killed); this bounds a failure
        deadline = time.monotonic() + 120
        s = host.read(1, "r")
        while time.monotonic() < deadline and len(host.tree_pids) < 2:
            time.sleep(0.05)
            s = host.read(2, "r")
        assert len(host.tree_pids) >= 2  # the child and its own child
        assert s.rss_bytes is not None and s.rss_bytes > 64 * 1024 * 1024
        assert s.cpu_percent is not None and 0 <= s.cpu_percent <= 100
        assert s.load1 is not None
        assert s.extra["host_mem_total_bytes"] > 0
        assert s.run_id == "r" and s.source == "host"
    finally:
        for p in psutil.Process(child.pid).children(recursive=True):
            p.kill()
        child.kill()
        child.wait()


def test_host_without_a_run_has_no_rss_and_a_vanished_pid_is_harmless() -> None:
    host = HostBackend()
    assert host.read(1, None).rss_bytes is None
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    host.follow(p.pid)
    assert host.read(2, "r").rss_bytes is None


def test_columns_are_the_ledgers() -> None:
    from ledger.store import TELEMETRY_COLUMNS

    assert COLUMNS == TELEMETRY_COLUMNS
    row = Sample(run_id="r", t_us=5, gpu=0, sm_clock_mhz=1.0).row("s")
    assert row[:5] == ("s", "r", 5, "host", 0) and len(row) == len(COLUMNS) + 1


def test_reasons_in_words() -> None:
    assert decode_reasons(0) == ["none"]
    assert decode_reasons(None) == ["unreadable"]
    assert decode_reasons(0x1 | 0x4 | 0x40) == ["GPU idle", "SW power cap", "HW thermal slowdown"]
    assert decode_reasons(0x8 | 0x1000) == ["HW slowdown", "0x1000"]


def test_the_package_imports_neither_textual_nor_session_nor_ledger() -> None:
    code = (
        "import sys, measure.telemetry, measure.telemetry.replay, measure.telemetry.nvml;"
        "top = {m.split('.')[0] for m in sys.modules};"
        "bad = sorted(top & {'textual', 'session', 'ledger', 'torch'});"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_monitor_satisfies_the_run_monitor_protocol() -> None:
    import inspect

    from measure.monitor import RunMonitor
    from measure.telemetry import TelemetryMonitor

    for name in ("run_started", "run_finished"):
        want = inspect.signature(getattr(RunMonitor, name)).parameters
        have = inspect.signature(getattr(TelemetryMonitor, name)).parameters
        assert list(want) == list(have)
