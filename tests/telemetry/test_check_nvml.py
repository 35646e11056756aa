"""tests/gpu/check_nvml.py, run against a replayed NVML (the real one needs a GPU)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from measure.telemetry.replay import ReplayBackend, ReplayLib, load_scenario

SCRIPT = Path(__file__).resolve().parents[1] / "gpu" / "check_nvml.py"


def load_script():
    spec = importlib.util.spec_from_file_location("check_nvml", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reads_times_lists_unsupported_and_writes_a_fixture_that_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lib = ReplayLib(load_scenario("unsupported-fields"))
    monkeypatch.setitem(sys.modules, "pynvml", lib)
    script = load_script()
    monkeypatch.setattr(sys, "argv", ["check_nvml.py", "--out", str(tmp_path), "--repeat", "3"])
    assert script.main() == 0
    out = capsys.readouterr().out
    assert "unsupported: clock_reasons_event, ecc, energy, mig, pcie_rx_kbps" in out
    assert "nvmlDeviceGetClockInfo" in out and "median µs" in out
    report = json.loads((tmp_path / "check_nvml.json").read_text())
    calls = report["devices"][0]["calls"]
    assert calls["sm_clock_mhz"]["median_us"] >= 0 and calls["ecc"]["error"]
    fixture = next(tmp_path.glob("replay_*.json"))
    data = json.loads(fixture.read_text())
    dev = data["devices"][0]
    assert dev["idle"]["sm_clock_mhz"] == 345.0 and dev["idle"]["power_w"] == 74.5
    assert "pcie_tx_kbps" in dev["unsupported"]
    monkeypatch.delitem(sys.modules, "pynvml")
    backend = ReplayBackend(fixture)
    assert backend.open()[0].max_sm_clock_mhz == 1980.0
    sample = backend.read(1, None)[0]
    assert sample.power_w == 74.5 and sample.pcie_tx_kbps is None


@pytest.mark.skipif(sys.platform != "linux", reason="the no-driver answer is Linux's here")
def test_standalone_without_gpu_says_so(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)], capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    if r.returncode == 0:
        pytest.skip("this machine has a GPU")
    assert r.returncode == 3
    assert r.stdout.startswith("NO GPU")
