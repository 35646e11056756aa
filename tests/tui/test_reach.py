"""Everything reachable (issue 15 item 1): every action of every step in the palette, Escape
goes back, one key means one thing, `?` shows the keys and a glossary, and typed text is
never thrown away without a question."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding
from textual.widgets import Input
from tui_helpers import SID, sample_ledger, settle, steady_app

from session import models as m
from tui.screens.modals import ConfirmModal, FormModal, HelpModal
from tui.screens.picker import PickerScreen
from tui.screens.session import PANES, SessionScreen
from tui.screens.steps.hypotheses import HypothesesPane
from tui.widgets.form import Field
from tui.widgets.palette import ScreenCommands


async def _titles(screen: object, query: str) -> list[str]:
    provider = ScreenCommands(screen)  # type: ignore[arg-type]
    return [str(getattr(h, "text", None) or h.prompt) async for h in provider.search(query)]


@pytest.mark.asyncio
@pytest.mark.slow  # over 2 s at rest: kept out of the quick subset
async def test_the_palette_finds_every_step_action_and_the_words_people_type(
    tmp_path: Path,
) -> None:
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        for word in ("hypothesis", "help", "back", "session", "decide", "evidence", "residual"):
            assert await _titles(screen, word), word
        titles = [c.title for c in screen.palette_commands()]
        for pane in PANES:  # every binding of every step has its entry
            for b in pane.BINDINGS:
                assert isinstance(b, Binding) and b.id, (pane.__name__, b)
                assert any(b.description in t or (b.tooltip or "") == t for t in titles)
        # an entry runs its action on its step: the status form of the selected hypothesis
        cmd = next(c for c in screen.palette_commands() if "hypothesis' status" in c.title)
        cmd.run()
        await settle(pilot, 6)
        assert screen.current is m.StepName.HYPOTHESES
        assert isinstance(app.screen, FormModal)


def test_one_key_means_one_thing_across_the_steps() -> None:
    meaning: dict[str, set[str]] = {}
    for pane in PANES:
        for b in pane.BINDINGS:
            assert isinstance(b, Binding)
            for key in b.key.split(","):
                meaning.setdefault(key, set()).add(b.action)
    for b in SessionScreen.BINDINGS:
        assert isinstance(b, Binding)
        for key in b.key.split(","):
            meaning.setdefault(key, set()).add(b.action)
    # `r` records or runs the measurement of its step and `s` stops it: one meaning each
    same = {"r": {"record", "run"}, "s": {"stop"}, "ctrl+s": {"save"}, "f2": {"save"}}
    clashes = {k: v for k, v in meaning.items() if len(v) > 1 and v != same.get(k)}
    assert not clashes
    assert meaning["x"] == {"export"}  # no longer "set status" in Hypotheses


@pytest.mark.asyncio
@pytest.mark.slow
async def test_escape_goes_from_a_field_to_its_step_then_to_the_session_list(
    tmp_path: Path,
) -> None:
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        app.screen.query_one("#field-title Input", Input).focus()
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)  # out of the field, still on the step
        assert app.focused is app.screen.pane()
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)
        # and back into it from the list, then Escape returns to the same list
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
        app.screen.pane().focus()
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_half_typed_hypothesis_is_never_cleared_without_a_question(
    tmp_path: Path,
) -> None:
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot, 5)
        pane = app.screen.query_one(HypothesesPane)
        pane.query_one("#field-title", Field).value = ""
        pane.query_one("#field-title Input", Input).focus()
        await pilot.press(*"fewer launches")
        pane.focus()
        await pilot.press("w")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("n")
        await settle(pilot)
        assert pane.query_one("#field-title", Field).value == "fewer launches"
        # leaving the session asks too
        pane.focus()
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
        assert pane.query_one("#field-title", Field).value == "fewer launches"
        pane.focus()
        await pilot.press("w", "y")
        await settle(pilot)
        assert pane.query_one("#field-title", Field).value == ""


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_form_with_typed_text_asks_before_escape_drops_it(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("5", "a")
        await settle(pilot, 5)
        assert isinstance(app.screen, FormModal)
        await pilot.press("escape")  # nothing typed: back to the step at once
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
        await pilot.press("a")
        await settle(pilot, 5)
        app.screen.query_one("#field-ref Input", Input).focus()
        await pilot.press(*"fast")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, FormModal)
        await pilot.press("escape", "y")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)


@pytest.mark.asyncio
@pytest.mark.slow
async def test_help_shows_hidden_keys_and_a_glossary(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot, 5)
        await pilot.press("question_mark")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, HelpModal)
        keys = modal.query_one("#help-keys").render()
        words = str(getattr(keys, "plain", keys))
        for needle in ("f5", "reload", "[", "older round", "esc", "back"):
            assert needle in words.lower(), needle
        gloss = modal.parts[2].plain
        for needle in ("C1", "C4", "BROKEN", "+N", "nothing moved", "waits for an earlier step"):
            assert needle in gloss, needle
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
