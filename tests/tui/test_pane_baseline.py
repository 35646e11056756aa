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


@pytest.mark.asyncio
async def test_baseline_progress_shows_one_counter_and_an_eta(tmp_path: Path) -> None:
    """The engine's own words count the runs ("run 5 of 24", warm-up apart): no second
    counter that disagrees with it ("runs 6/25"), and an ETA from the pace so far."""
    from textual.widgets import Static

    from session.conduct import Progress

    ledger = sample(tmp_path / "l.db", m.StepName.CONTRACT)
    app = PaneApp(BaselinePane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        app.pane.progress(Progress("baseline", "softmax: warm-up", runs_done=1, runs_total=25))
        await pilot.pause(0.3)
        app.pane.progress(Progress("baseline", "softmax: run 5 of 24", runs_done=6, runs_total=25))
        await pilot.pause()
        shown = str(app.pane.query_one("#baseline-status", Static).content)
        assert "run 5 of 24" in shown and "6/25" not in shown
        eta = shown.split("ETA ", 1)[1].split(" ", 1)[0]
        assert eta != "—" and ":" in eta
    ledger.close()
