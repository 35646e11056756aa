"""The contract pane alone: ctrl+s asks to save the session as the form holds it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample

from session import models as m
from tui.screens.pane_messages import SaveSession
from tui.screens.steps.contract import ContractPane
from tui.widgets.form import Field


@pytest.mark.asyncio
async def test_contract_pane_asks_to_save_the_edited_session(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = make_repo()
    ledger = sample(tmp_path / "l.db", m.StepName.CONTRACT)
    app = PaneApp(ContractPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        app.pane.query_one("#field-title", Field).value = "a new title"
        app.pane.query_one("#field-repo", Field).value = str(repo)
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        got = app.holder.got
        assert [type(x) for x in got] == [SaveSession]
        assert isinstance(got[0], SaveSession) and got[0].session.title == "a new title"
        assert got[0].session.repo == str(repo.resolve())
    ledger.close()
