"""`gpuopt telemetry`: one-shot JSON, the no-GPU line, the replay label on every line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console, Group

from tui.telemetry_view import View, sparkline

ROOT = Path(__file__).resolve().parents[2]


def gpuopt(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="120")
    return subprocess.run(
        [sys.executable, "-m", "tui", *args], capture_output=True, text=True, env=env,
        timeout=timeout, cwd=ROOT,
    )  # fmt: skip


def _gpu_present() -> bool:
    from measure.telemetry import BackendUnavailable
    from measure.telemetry.nvml import NvmlBackend

    try:
        NvmlBackend().open()
    except BackendUnavailable:
        return False
    return True


@pytest.mark.skipif(_gpu_present(), reason="this machine has a working NVIDIA GPU")
def test_once_json_without_gpu_gives_the_reason_and_the_host() -> None:
    r = gpuopt("telemetry", "--once", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["nvml"] == "NVML Shared Library Not Found"
    assert data["gpus"] == [] and data["replay"] is False
    assert data["host"]["cpu_percent"] is not None and data["host"]["load1"] is not None


@pytest.mark.skipif(_gpu_present(), reason="this machine has a working NVIDIA GPU")
def test_once_text_without_gpu_says_why_in_one_line() -> None:
    r = gpuopt("telemetry", "--once")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "no GPU telemetry: NVML Shared Library Not Found"
    assert lines[1].startswith("host")


def test_once_json_replay() -> None:
    r = gpuopt("telemetry", "--replay", "mig", "--once", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["replay"] is True and data["source"] == "replay" and data["nvml"] == "ok"
    assert data["devices"][0]["mig"] is True
    gpu = data["gpus"][0]
    assert gpu["source"] == "replay" and gpu["reasons"] == ["GPU idle"]
    assert gpu["sm_clock_mhz"] == 345.0


def test_bad_usage_is_one_line_and_exit_2() -> None:
    r = gpuopt("telemetry", "--replay", "nope", "--once")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "no replay scenario 'nope'" in r.stderr
    r = gpuopt("telemetry", "--json")
    assert r.returncode == 2 and "--json goes with --once" in r.stderr


def test_scenarios_are_listed() -> None:
    r = gpuopt("telemetry", "--scenarios")
    assert r.returncode == 0
    assert "hw-slowdown-mid-run" in r.stdout and "library-missing" in r.stdout


@pytest.mark.slow
def test_live_replay_labels_every_line_and_shows_verdicts() -> None:
    r = gpuopt("telemetry", "--replay", "hw-slowdown-mid-run", "--seconds", "9.5",
               "--interval", "0.25")  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stdout.splitlines() if line.strip()]
    assert lines and all(line.startswith(("REPLAY │ ", "LIVE   │ host")) for line in lines), lines
    assert sum(line.startswith("REPLAY │ ") for line in lines) > 1  # the GPU's lines
    text = r.stdout
    assert "replay run 1: clean" in text
    assert "replay run 2: untrusted" in text and "HW slowdown in" in text


def test_view_renders_every_line_with_replay_at_a_narrow_width() -> None:
    from measure.telemetry import make_monitor

    view = View(replay="HW slowdown mid-run")
    monitor = make_monitor(None, None, scenario="hw-slowdown-mid-run", on_sample=view.on_sample,
                           start=False)  # fmt: skip
    view.status = monitor.status
    view.devices = {d.index: d for d in monitor.devices}
    monitor.run_started("a", None)
    monitor.run_finished("a")
    monitor.run_started("b", None)
    monitor.tick()
    monitor.close()
    console = Console(width=60, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(Group(*view.lines()))
    out = console.export_text().splitlines()
    assert len(out) >= 8
    assert all(line.startswith(("REPLAY │ ", "LIVE   │ host")) for line in out), out
    assert any("reasons: HW slowdown" in line for line in out)
    assert any("1110 / 1980 MHz" in line for line in out)


def test_sparkline_scales_to_its_top() -> None:
    assert sparkline([0, 50, 100], 100, width=3) == "▁▅█"
    assert sparkline([None, 100], 100, width=2) == " █"
    assert sparkline([], 100, width=4) == "    "
