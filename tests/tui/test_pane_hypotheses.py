"""The hypotheses pane alone: ctrl+s asks to add the hypothesis written in the form; t
asks for the selected one's status form (`x` is export elsewhere); + asks for evidence."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample

from tui.screens.pane_messages import AddHypothesis, AskEvidence, AskHypothesisStatus
from tui.screens.steps.hypotheses import HypothesesPane
from tui.widgets.form import Field


@pytest.mark.asyncio
async def test_hypotheses_pane_asks_to_add_and_to_set_a_status(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(HypothesesPane, ledger)
    async with app.run_test(size=(120, 60)) as pilot:
        await built(pilot, app.pane)
        app.pane.query_one("#field-title", Field).value = "fewer launches"
        app.pane.query_one("#field-symptom", Field).value = "many small kernels"
        await pilot.press("ctrl+s")
        await pilot.pause()
        got = app.holder.got
        assert [type(x) for x in got] == [AddHypothesis]
        assert isinstance(got[0], AddHypothesis) and got[0].values["title"] == "fewer launches"
        app.holder.got.clear()
        app.pane.query_one("DataTable").focus()
        await pilot.press("x")  # not this pane's key any more
        await pilot.pause()
        assert app.holder.got == []
        await pilot.press("t")
        await pilot.pause()
        got = app.holder.got
        assert [type(x) for x in got] == [AskHypothesisStatus]
        assert isinstance(got[0], AskHypothesisStatus)
        selected = app.pane.selected()
        assert selected is not None and got[0].hypothesis.id == selected.id
        app.holder.got.clear()
        await pilot.press("plus")
        await pilot.pause()
        got = app.holder.got
        assert [type(x) for x in got] == [AskEvidence]
        assert isinstance(got[0], AskEvidence) and got[0].hypothesis is not None
    ledger.close()
