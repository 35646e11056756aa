"""`gpuopt telemetry` as an app (issue 15 item 7), through the replay backend: every GPU
with its history, the compute processes on it, the host; keys pause, change the rate and
pick a GPU; a replay says so in a column of its own."""

from __future__ import annotations

import os

import pytest
from textual.widgets import DataTable, Static

from tui.telemetry_app import RATES, TelemetryApp


async def _until(pilot: object, ok: object, timeout_s: float = 15.0) -> None:
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ok():  # type: ignore[operator]
            return
        await pilot.pause(0.1)  # type: ignore[attr-defined]
    raise AssertionError("not shown in time")


def _plain(app: TelemetryApp, selector: str) -> str:
    content = app.query_one(selector, Static).content
    return str(getattr(content, "plain", content))


@pytest.mark.asyncio
async def test_the_app_shows_a_replayed_gpu_its_processes_and_the_host() -> None:
    app = TelemetryApp(scenario="foreign-process", interval=0.25)
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: "GPU 0" in _plain(app, "#tm-gpus"))
        shown = _plain(app, "#tm-gpus")
        lines = [ln for ln in shown.split("\n") if ln]
        assert all(ln.startswith("REPLAY │ ") for ln in lines), lines[:3]
        for needle in ("util", "SM", "power", "temp", "reasons", "host"):
            assert needle in shown, needle
        assert "REPLAY" in _plain(app, "#tm-head")
        # the foreign process shows up in the process table once a replayed run is on
        table = app.query_one("#tm-procs", DataTable)
        await _until(pilot, lambda: table.row_count > 0, 20.0)
        pids = [table.get_row_at(i)[1] for i in range(table.row_count)]
        assert "4194301" in pids  # the scenario's foreign pid
        rate = app.rate
        await pilot.press("minus")
        assert app.rate == min(rate + 1, len(RATES) - 1)
        await pilot.press("space")
        assert app.paused and "paused" in _plain(app, "#tm-head")
        await pilot.press("space")
        assert not app.paused
        await pilot.press("g")
        assert app.gpu == 0  # one GPU: the next is itself
        await pilot.press("q")


def test_once_json_is_unchanged_by_the_app() -> None:
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "tui", "telemetry", "--once", "--json", "--replay", "clean"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["replay"] is True and data["gpus"] and "host" in data
