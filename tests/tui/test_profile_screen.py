"""The profile screen: operator and intermediate tables of the picked profile, and a roofline
chart of all of them (fixed summaries: no torch, no clock)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.app import App
from textual.widgets import DataTable, Static

from tui.screens.profile import ProfileScreen
from tui.widgets.roofline import RooflineChart


def _summary(ops: list[tuple[str, float]], ai: float, achieved: float) -> dict[str, Any]:
    total = sum(t for _, t in ops)
    return {
        "workload": "softmax", "device": "cpu", "dtype": "float32", "profiled_steps": 3,
        "step_ms": total / 1e3, "launches": len(ops),
        "launch_source": "computing top-level aten ops (CPU)",
        "operators": [
            {"name": n, "calls": 1, "self_us": t, "share": t / total, "input_shapes": [[128, 1024]]}
            for n, t in ops
        ],
        "dominant": {"name": ops[0][0], "share": ops[0][1] / total},
        "intermediates": [
            {"bytes": 524288, "shape": [128, 1024], "dtype": "float32", "producer": "aten::sub",
             "consumers": ["aten::exp"], "alive_us": 700.0, "kind": "intermediate"},
        ],
        "work": {"flops": 655360, "bytes": 4197376},
        "roofline": {
            "intensity": ai, "achieved_flops": achieved, "suggested": "memory-bound",
            "ceilings": {"bandwidth": 1.7e10, "flops": 7.4e10, "launch_s": 4.6e-6,
                         "source": "measured on this machine"},
            "reasons": ["intensity below the ridge point"],
        },
    }  # fmt: skip


PROFILES = [
    ("baseline", _summary([("aten::exp", 650.0), ("aten::div", 190.0), ("aten::sub", 90.0)],
                          0.156, 9.6e8)),
    ("fused", _summary([("aten::_softmax", 300.0)], 0.31, 2.2e9)),
]  # fmt: skip


class _Host(App[None]):
    def on_mount(self) -> None:
        self.push_screen(ProfileScreen(PROFILES))


@pytest.mark.asyncio
async def test_tables_follow_the_picked_profile() -> None:
    app = _Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ProfileScreen)
        ops = screen.query_one("#profile-ops", DataTable)
        assert ops.row_count == 3
        assert str(ops.get_row_at(0)[0]) == "aten::exp"
        facts = str(screen.query_one("#profile-facts", Static).render())
        assert "dominant operation aten::exp" in facts and "memory-bound" in facts
        assert screen.query_one("#profile-tensors", DataTable).row_count == 1
        chart = screen.query_one(RooflineChart)
        assert [p[0] for p in chart._profiles] == ["baseline", "fused"]
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert screen.current == 1 and ops.row_count == 1
        assert str(ops.get_row_at(0)[0]) == "aten::_softmax"


def test_profile_screen_snapshot(snap_compare: Any) -> None:
    assert snap_compare(_Host(), terminal_size=(120, 40))
