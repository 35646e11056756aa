"""The real NVML backend on a machine without an NVIDIA driver: a clean 'unavailable'."""

from __future__ import annotations

import pytest

from measure.telemetry import BackendUnavailable, make_monitor
from measure.telemetry.nvml import NvmlBackend, visible_selection


def _gpu_present() -> bool:
    try:
        NvmlBackend().open()
    except BackendUnavailable:
        return False
    return True


no_gpu = pytest.mark.skipif(_gpu_present(), reason="this machine has a working NVIDIA GPU")


@no_gpu
def test_real_backend_says_why_without_an_exception() -> None:
    with pytest.raises(BackendUnavailable) as info:
        NvmlBackend().open()
    reason = str(info.value)
    assert reason and "\n" not in reason
    assert "NVML" in reason or "Driver" in reason or "GPU" in reason


@no_gpu
def test_monitor_without_gpu_records_host_and_judges_unknown() -> None:
    rows: list[tuple] = []
    monitor = make_monitor(rows.extend, "s", start=False)
    assert monitor.status != "ok"
    assert monitor.devices == []
    monitor.run_started("r1", None)
    monitor.tick()
    obs = monitor.run_finished("r1")
    monitor.close()
    assert obs.trust == "unknown"
    assert obs.reasons == [f"no GPU telemetry: {monitor.status}"]
    assert rows and all(r[3] == "host" for r in rows)  # (session, run_id, t_us, source, ...)
    assert {r[1] for r in rows} == {"r1"}


def test_gpu_telemetry_off() -> None:
    monitor = make_monitor(None, None, gpu=False, start=False)
    monitor.run_started("r", None)
    obs = monitor.run_finished("r")
    monitor.close()
    assert obs.trust == "unknown"
    assert obs.reasons == ["no GPU telemetry: GPU telemetry is off"]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (None, None),
        ("", []),
        ("0,1", ["0", "1"]),
        ("1,-1,0", ["1"]),
        ("GPU-ab, 2", ["GPU-ab", "2"]),
    ],
)
def test_cuda_visible_devices_parsing(env: str | None, expected: list[str] | None) -> None:
    assert visible_selection(env) == expected


def test_cuda_visible_devices_selects_by_index_and_uuid() -> None:
    from measure.telemetry.replay import ReplayLib, load_scenario

    sc = load_scenario("clean")
    second = dict(sc["devices"][0], index=1, uuid="GPU-bbbb-2", mig=True, mig_uuids=["MIG-c-1"])
    sc = dict(sc, devices=[sc["devices"][0], second])
    assert [d.index for d in NvmlBackend(ReplayLib(sc), visible="1").open()] == [1]
    assert [d.index for d in NvmlBackend(ReplayLib(sc), visible="GPU-bbbb").open()] == [1]
    assert [d.index for d in NvmlBackend(ReplayLib(sc), use_env=False).open()] == [0, 1]
    # a MIG instance is watched through the GPU it lives on
    assert [d.index for d in NvmlBackend(ReplayLib(sc), visible="MIG-c-1").open()] == [1]
    with pytest.raises(BackendUnavailable, match="selects none"):
        NvmlBackend(ReplayLib(sc), visible="7").open()
