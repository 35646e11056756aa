"""The preflight pane alone: ctrl+s asks to save only the answers edited in the form."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample

from session import models as m
from tui.screens.pane_messages import SaveModels
from tui.screens.steps.preflight import PreflightPane
from tui.widgets.form import Field


@pytest.mark.asyncio
async def test_preflight_pane_asks_to_save_the_edited_answer(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db", m.StepName.BASELINE)
    app = PaneApp(PreflightPane, ledger)
    async with app.run_test(size=(120, 60)) as pilot:
        await built(pilot, app.pane)
        app.pane.query_one("#field-lifetime-kind", Field).value = "measured"
        app.pane.query_one("#field-lifetime-text", Field).value = "freed after the step"
        await pilot.press("ctrl+s")
        await pilot.pause()
        got = app.holder.got
        assert [type(x) for x in got] == [SaveModels]
        assert isinstance(got[0], SaveModels)
        (answer,) = got[0].items
        assert answer.question is m.PreflightQuestion.LIFETIME
        assert answer.text == "freed after the step"
    ledger.close()
