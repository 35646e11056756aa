"""The round pane alone: a asks for the variant form, r for a round with the blocks typed."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample

from tui.screens.pane_messages import AskVariant, StartRound
from tui.screens.steps.round import RoundPane
from tui.widgets.form import Field


@pytest.mark.asyncio
async def test_round_pane_asks_for_a_variant_and_a_round(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        app.pane.query_one("#field-min_blocks", Field).value = "10"
        app.pane.query_one("#field-max_blocks", Field).value = "20"
        await pilot.press("a", "r")
        await pilot.pause()
        got = app.holder.got
        assert [type(x) for x in got] == [AskVariant, StartRound]
        assert isinstance(got[1], StartRound)
        assert (got[1].min_blocks, got[1].max_blocks) == (10, 20)
    ledger.close()


@pytest.mark.asyncio
async def test_round_pane_read_only_asks_nothing(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RoundPane, ledger, readonly=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        await pilot.press("a", "r")
        await pilot.pause()
        assert app.holder.got == []
    ledger.close()
