"""Issue 19 item 5: the add-variant warnings the CLI printed (identical tree, too many
files, uncommitted baseline edits) come from the session layer as data, and the app shows
them too (it showed none)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import settle, steady_app

from ledger import Ledger
from session import models as m
from session.api import Session, VariantWarningKind
from tui.demo.repo import create_repo
from tui.demo.start import start_session
from tui.screens.modals import FormModal
from tui.screens.session import SessionScreen
from tui.widgets.form import Field


def test_a_variant_of_the_baselines_own_tree_is_said_identical(tmp_path: Path) -> None:
    repo = create_repo(tmp_path / "demo")
    with Ledger.open(tmp_path / "l.db") as ledger:
        session, _ = start_session(ledger, repo, "command")
        got = Session(ledger, session.id).add_variant(session, "same", ref="main")
    assert got.value.files_changed == 0
    assert [w.kind for w in got.warnings] == [VariantWarningKind.IDENTICAL]
    assert got.words() == ["this variant is identical to the baseline snapshot"]
    assert got.next_step is not None and got.next_step.step is m.StepName.ROUND


@pytest.mark.asyncio
async def test_the_app_shows_the_identical_variant_note(tmp_path: Path) -> None:
    repo = create_repo(tmp_path / "demo")
    db = tmp_path / "l.db"
    with Ledger.open(db) as ledger:
        session, _ = start_session(ledger, repo, "command")
    app = steady_app(db, session_id=session.id)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        screen.goto(m.StepName.ROUND)
        screen.ask_variant()
        await settle(pilot)
        form = app.screen
        assert isinstance(form, FormModal)
        form.query_one("#field-ref", Field).value = "main"
        form.query_one("#field-name", Field).value = "same"
        await pilot.press("ctrl+s")
        await settle(pilot, 10)
        await app.workers.wait_for_complete()
        shown = [str(n.message) for n in app._notifications]
    assert any("identical to the baseline snapshot" in s for s in shown), shown
    with Ledger.open(db) as ledger:
        assert [v.name for v in ledger.list(m.Variant, session_id=session.id)] == ["same"]
