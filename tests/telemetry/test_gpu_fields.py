"""On a real GPU: every field read through the NVML backend (skipped without one)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from measure.telemetry import BackendUnavailable, make_monitor
from measure.telemetry.backend import GPU_FIELDS
from measure.telemetry.nvml import NvmlBackend

pytestmark = pytest.mark.gpu

CORE = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c", "util_gpu", "mem_used_bytes")


@pytest.fixture(scope="module")
def backend():
    b = NvmlBackend()
    try:
        devices = b.open()
    except BackendUnavailable as exc:
        pytest.skip(f"no GPU: {exc}")
    yield b, devices
    b.close()


def test_every_field_on_every_gpu(backend) -> None:
    b, devices = backend
    assert devices and all(d.name and d.uuid.startswith(("GPU-", "MIG-")) for d in devices)
    samples = b.read(0, None, pcie=True)
    assert [s.gpu for s in samples] == [d.index for d in devices]
    for s in samples:
        unsupported = b.unsupported[s.gpu]
        for name in GPU_FIELDS:
            value = getattr(s, name)
            group = "utilization" if name.startswith("util_") else name
            if name == "clock_reasons":
                assert value is not None or {"clock_reasons", "clock_reasons_event"} <= unsupported
            elif value is None:
                assert group in unsupported, f"GPU {s.gpu}: {name} is NULL but not unsupported"
        for name in CORE:
            assert getattr(s, name) is not None, f"GPU {s.gpu}: {name} should read on any GPU"
        assert 0 < s.sm_clock_mhz <= (devices[0].max_sm_clock_mhz or 10_000)
    counters = b.counters()
    assert set(counters) == {d.index for d in devices}
    assert isinstance(b.processes(), dict)


def test_a_monitored_run_on_the_gpu_is_judged(backend) -> None:
    rows: list[tuple] = []
    monitor = make_monitor(rows.extend, "gpu-test")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    monitor.run_started("r", child.pid)
    child.wait()
    obs = monitor.run_finished("r")
    monitor.close()
    assert monitor.status == "ok"
    assert obs.trust in ("clean", "warn", "untrusted")  # evidence was read: never unknown
    assert obs.deltas["gpus"]
    assert sum(1 for r in rows if r[1] == "r" and r[4] is not None) >= 4
