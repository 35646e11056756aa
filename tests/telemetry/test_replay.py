"""Replay scenarios driven through the real monitor, sampler and NVML backend code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledger import Ledger
from measure.monitor import RunObservation
from measure.telemetry import make_monitor
from measure.telemetry.replay import ReplayBackend, load_scenario, scenario_names

REQUIRED = {
    "library-missing", "zero-devices", "unsupported-fields", "sw-power-cap",
    "hw-slowdown-mid-run", "ecc-error", "lost-gpu", "mig",
}  # fmt: skip


def drive(
    scenario: str, runs: int, ledger: Ledger | None = None, ticks: int = 3
) -> tuple[Any, list[RunObservation]]:
    """Step a monitor by hand: each run gets a start sample, `ticks` more, an end sample."""
    monitor = make_monitor(
        ledger.insert_samples if ledger is not None else None, "sess", scenario=scenario,
        start=False,
    )  # fmt: skip
    obs = []
    monitor.tick()  # an idle sample before the first run
    for n in range(1, runs + 1):
        monitor.run_started(f"run{n}", None)
        for _ in range(ticks):
            monitor.tick()
        obs.append(monitor.run_finished(f"run{n}"))
        monitor.tick()
    monitor.close()
    return monitor, obs


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger.open(tmp_path / "ledger.db")


def test_the_required_scenarios_ship_with_the_package() -> None:
    assert set(scenario_names()) >= REQUIRED


@pytest.mark.parametrize("name", scenario_names())
def test_every_scenario_gives_the_trust_it_promises(name: str) -> None:
    expect = load_scenario(name)["expect"]
    runs = len(expect) + 1
    _, obs = drive(name, runs)
    wanted = [expect[min(i, len(expect) - 1)] for i in range(runs)]
    assert [o.trust for o in obs] == wanted, [o.reasons for o in obs]
    for o in obs:
        if o.trust != "clean":
            assert o.reasons, "a verdict other than clean always says why"


def test_library_missing_gives_unknown_with_nvml_reason_and_keeps_host(ledger: Ledger) -> None:
    monitor, obs = drive("library-missing", 1, ledger)
    assert monitor.status == "NVML Shared Library Not Found"
    assert obs[0].trust == "unknown"
    assert obs[0].reasons == ["no GPU telemetry: NVML Shared Library Not Found"]
    rows = ledger.samples(session_id="sess")
    assert rows and {r.source for r in rows} == {"host"}
    assert all(r.cpu_percent is not None for r in rows)


def test_zero_devices(ledger: Ledger) -> None:
    monitor, obs = drive("zero-devices", 1, ledger)
    assert monitor.devices == []
    assert obs[0].trust == "unknown"
    assert "0 devices" in obs[0].reasons[0]


def test_unsupported_fields_are_null_and_never_asked_again(ledger: Ledger) -> None:
    monitor, obs = drive("unsupported-fields", 3, ledger)
    assert [o.trust for o in obs] == ["clean"] * 3
    gpu_rows = [r for r in ledger.samples(session_id="sess") if r.gpu is not None]
    assert len(gpu_rows) >= 15
    assert all(r.pcie_tx_kbps is None and r.pcie_rx_kbps is None for r in gpu_rows)
    assert all(r.clock_reasons == 0 for r in gpu_rows if r.run_id)  # via the older call
    calls = monitor.sampler.gpu.replay_lib.calls
    assert calls["nvmlDeviceGetPcieThroughput"] == 2  # tx and rx once each, then never
    assert calls["nvmlDeviceGetTotalEnergyConsumption"] == 1
    assert calls["nvmlDeviceGetTotalEccErrors"] == 1
    assert calls["nvmlDeviceGetCurrentClocksEventReasons"] == 1
    assert calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == len(gpu_rows)
    gpu = obs[0].deltas["gpus"]["0"]
    assert gpu["energy_j"] is None and gpu["ecc_uncorrected"] is None
    assert {"pcie_tx_kbps", "energy", "ecc", "clock_reasons_event"} <= set(gpu["unsupported"])
    assert monitor.devices[0].mig is False  # no MIG support: it cannot be on


def test_sw_power_cap_warns() -> None:
    _, obs = drive("sw-power-cap", 1)
    assert obs[0].trust == "warn"
    assert obs[0].reasons == ["SW power cap in 4 of 5 busy samples"]


def test_hw_slowdown_mid_run_untrusts_that_run_only(ledger: Ledger) -> None:
    _, obs = drive("hw-slowdown-mid-run", 3, ledger)
    assert [o.trust for o in obs] == ["clean", "untrusted", "clean"]
    assert obs[1].reasons[0] == "HW slowdown in 4 of 5 busy samples"
    run2 = ledger.samples(run_id="run2")
    gpu = [r for r in run2 if r.gpu == 0]
    assert [r.clock_reasons for r in gpu] == [0, 8, 8, 8, 8]
    assert all(r.source == "replay" for r in gpu)
    d = obs[1].deltas
    assert all(d["started_us"] <= r.t_us <= d["ended_us"] for r in run2)
    assert d["gpus"]["0"]["energy_j"] == pytest.approx(5 * 153.0)


def test_ecc_error_untrusts_the_run_it_appeared_in() -> None:
    _, obs = drive("ecc-error", 2)
    assert obs[0].trust == "untrusted"
    assert obs[0].reasons == ["1 uncorrected ECC error appeared"]
    assert obs[0].deltas["gpus"]["0"]["ecc_uncorrected"] == 1
    assert obs[1].trust == "clean"


def test_lost_gpu_is_untrusted_without_an_exception(ledger: Ledger) -> None:
    monitor, obs = drive("lost-gpu", 3, ledger)
    assert [o.trust for o in obs] == ["clean", "untrusted", "untrusted"]
    assert "GPU 0 was lost" in obs[1].reasons[0]
    assert monitor.sampler.gpu.lost == {0}
    run2 = [r for r in ledger.samples(run_id="run2") if r.gpu == 0]
    assert run2[0].sm_clock_mhz is not None
    assert all(r.sm_clock_mhz is None and r.clock_reasons is None for r in run2[1:])
    host3 = [r for r in ledger.samples(run_id="run3") if r.source == "host"]
    assert host3, "the host keeps being sampled after the GPU is gone"


def test_mig_warns() -> None:
    monitor, obs = drive("mig", 1)
    assert monitor.devices[0].mig is True
    assert obs[0].trust == "warn"
    assert obs[0].reasons == ["MIG mode is on (the GPU is partitioned)"]


def test_foreign_process_warns_with_its_pid() -> None:
    _, obs = drive("foreign-process", 1)
    assert obs[0].trust == "warn"
    assert obs[0].reasons[0].startswith("another process on the GPU: pid 4194301")


def test_run_finished_without_start_is_unknown() -> None:
    monitor = make_monitor(None, None, scenario="clean", start=False)
    o = monitor.run_finished("never-started")
    monitor.close()
    assert o.trust == "unknown"
    assert o.reasons == ["no telemetry was recorded for this run"]


def test_scenario_from_a_file_and_an_unknown_name(tmp_path: Path) -> None:
    import json

    from measure.telemetry import BackendUnavailable

    data = load_scenario("clean")
    data["devices"][0]["name"] = "from a file"
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(data))
    backend = ReplayBackend(path)
    assert backend.open()[0].name == "from a file"
    with pytest.raises(BackendUnavailable, match="no replay scenario 'nope'"):
        ReplayBackend("nope")


def test_replay_opens_and_shuts_nvml_once() -> None:
    monitor, _ = drive("clean", 2)
    lib = monitor.sampler.gpu.replay_lib
    assert (lib.initialised, lib.shutdowns) == (1, 1)
