"""Replayed telemetry is never shown as this machine's: REPLAY on every line of the panel, in
a column of its own, ruled off from the labels (never "REPLAYutil")."""

from __future__ import annotations

from scenes import demo_samples

from tui.widgets.telemetry import TelemetryPanel


def _lines(panel: TelemetryPanel) -> list[str]:
    return [ln for ln in panel.render().plain.split("\n") if ln]


def test_every_line_of_a_replayed_trace_says_replay() -> None:
    panel = TelemetryPanel()
    panel.gpu_name = "NVIDIA H200"
    panel.push_many(demo_samples())
    lines = _lines(panel)
    assert len(lines) >= 6 and all(ln.startswith("REPLAY │ ") for ln in lines)
    assert any(ln.startswith("REPLAY │ util ") for ln in lines)
    panel.compact = True
    assert all(ln.startswith("REPLAY │ ") for ln in _lines(panel))


def test_live_samples_carry_no_replay_label() -> None:
    panel = TelemetryPanel()
    live = [s.model_copy(update={"source": "nvml"}) for s in demo_samples()]
    panel.push_many(live)
    assert not any("REPLAY" in ln for ln in _lines(panel))
