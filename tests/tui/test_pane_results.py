"""The results pane alone: it shows the round's verdicts and asks to confirm a residual."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample

from tui.screens.pane_messages import AskResidual
from tui.screens.steps.results import ResultsPane


@pytest.mark.asyncio
async def test_results_pane_shows_verdicts_and_asks_for_a_residual(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(ResultsPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        text = " ".join(str(s.render()) for s in app.pane.query("Static"))
        assert "FASTER" in text
        await pilot.press("c")
        await pilot.pause()
        assert [type(x) for x in app.holder.got] == [AskResidual]
    ledger.close()
