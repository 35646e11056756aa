"""Issue 22 Build 1: rename, archive, delete and the export folder are reachable from
inside a session (the palette), as `gpuopt session ...` and `gpuopt export -o` do."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input
from tui_helpers import SID, sample_ledger, settle, steady_app

from session import models as m
from tui.screens.modals import ConfirmModal, FormModal
from tui.screens.picker import PickerScreen
from tui.screens.session import SessionScreen


def _run(screen: SessionScreen, title: str) -> None:
    next(c for c in screen.palette_commands() if c.title == title).run()


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_record_is_exported_to_the_folder_typed(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        _run(screen, "Export the record to a folder…")
        await settle(pilot)
        assert isinstance(app.screen, FormModal)
        app.screen.query_one("#field-directory Input", Input).value = str(tmp_path / "out")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is screen
        written = Path(app.exported)  # type: ignore[attr-defined]
    assert written.parent == tmp_path / "out" and written.is_file()
    assert written.with_suffix(".json").is_file()
    assert app.export_dir == str(tmp_path / "out")  # type: ignore[attr-defined]


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_session_is_renamed_archived_and_deleted_from_inside_it(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        _run(screen, "Rename this session")
        await settle(pilot)
        assert isinstance(app.screen, FormModal)
        app.screen.query_one("#field-title Input", Input).value = "Renamed inside"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.ledger.get(m.Session, SID).title == "Renamed inside"
        _run(screen, "Archive this session")
        await settle(pilot)
        assert app.ledger.get(m.Session, SID).archived
        _run(screen, "Bring this session back from the archive")
        await settle(pilot)
        assert not app.ledger.get(m.Session, SID).archived
        _run(screen, "Delete this session (asked first)")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("n")
        await settle(pilot)
        assert app.ledger.get(m.Session, SID) is not None  # "no" deletes nothing
        _run(screen, "Delete this session (asked first)")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert app.ledger.get(m.Session, SID) is None
        assert isinstance(app.screen, PickerScreen)
