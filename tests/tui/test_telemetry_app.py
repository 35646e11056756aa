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
@pytest.mark.slow  # over 2 s at rest: kept out of the quick subset
async def test_the_app_shows_a_replayed_gpu_its_processes_and_the_host() -> None:
    app = TelemetryApp(scenario="foreign-process", interval=0.25)
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: "GPU 0" in _plain(app, "#tm-gpus"))
        shown = _plain(app, "#tm-gpus")
        lines = [ln for ln in shown.split("\n") if ln]
        # the GPU is replayed; the host is this machine's own: each says which, in a column
        assert all(ln.startswith(("REPLAY │ ", "LIVE   │ host")) for ln in lines), lines[:3]
        assert any(ln.startswith("LIVE   │ host") for ln in lines)
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


def _fed(app: TelemetryApp) -> TelemetryApp:
    """The app fed a fixed replay (no sampler thread): the same picture every time."""
    from measure.telemetry.backend import Sample
    from measure.telemetry.replay import ReplayBackend

    backend = ReplayBackend("foreign-process")
    devices = backend.open()
    app.view.status = "ok"
    app.view.devices = {d.index: d for d in devices}
    app.view.replay = backend.title
    t0 = 1_780_000_000_000_000
    for tick in range(40):
        backend.advance(1 if 8 <= tick < 30 else None, tick)
        app.view.on_sample(backend.read(t0 + tick * 250_000, None))
        host = Sample(
            run_id=None,
            t_us=t0 + tick * 250_000,
            cpu_percent=20.0 + tick % 7,
            load1=1.5,
            extra={"host_mem_used_bytes": 21 * 2**30, "host_mem_total_bytes": 64 * 2**30},
        )
        app.view.on_sample([host])
    backend.close()
    app.view.verdicts.append("replay run 1: warn\n  · another process on the GPU: pid 4194301")
    app.processes = {
        0: [{"pid": 4194301, "user": "—", "memory": "—", "command": "(not on this host)"}]
    }
    return app


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_telemetry_app_snapshot(size, snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = _fed(TelemetryApp(scenario="foreign-process", sample=False))
    assert snap_compare(app, terminal_size=size)
