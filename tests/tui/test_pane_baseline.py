"""The baseline pane alone: r asks for a baseline with the runs typed; too few runs is
refused in the field; s asks to stop."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample

from session import models as m
from tui.screens.pane_messages import StartBaseline, StopWork
from tui.screens.steps.baseline import BaselinePane
from tui.widgets.form import Field


@pytest.mark.asyncio
async def test_baseline_pane_asks_for_a_baseline_and_a_stop(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db", m.StepName.CONTRACT)
    app = PaneApp(BaselinePane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        runs = app.pane.query_one("#field-runs", Field)
        runs.value = "3"
        await pilot.press("r")
        await pilot.pause()
        assert app.holder.got == []  # too few runs to judge its halves: refused here
        runs.value = "12"
        await pilot.press("r", "s")
        await pilot.pause()
        got = app.holder.got
        assert [type(x) for x in got] == [StartBaseline, StopWork]
        assert isinstance(got[0], StartBaseline) and got[0].runs == 12
    ledger.close()
