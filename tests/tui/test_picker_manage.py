"""The session list manages sessions (issue 15 item 8, the picker's half): rename, archive
and delete through session.manage, delete asked first."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input
from tui_helpers import SID, sample_ledger, settle, steady_app

from ledger import Ledger
from session import models as m
from tui.screens.modals import ConfirmModal, FormModal
from tui.screens.picker import PickerScreen


@pytest.mark.asyncio
async def test_the_picker_renames_archives_and_deletes_a_session(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, FormModal)
        box = app.screen.query_one("#field-title Input", Input)
        box.value = "Softmax, renamed"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)
        assert app.ledger.get(m.Session, SID).title == "Softmax, renamed"
        await pilot.press("A")
        await settle(pilot)
        assert app.ledger.get(m.Session, SID).archived
        await pilot.press("A")
        await settle(pilot)
        assert not app.ledger.get(m.Session, SID).archived
        await pilot.press("delete")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("n")  # asked, and nothing deleted on "no"
        await settle(pilot)
        assert app.ledger.get(m.Session, SID) is not None
        await pilot.press("delete", "y")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)
    with Ledger.open(db) as ledger:
        assert ledger.get(m.Session, SID) is None
