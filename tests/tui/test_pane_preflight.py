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


@pytest.mark.asyncio
@pytest.mark.slow
async def test_preflight_pane_sets_the_bottleneck_the_checklist_and_an_evidence_link(
    tmp_path: Path,
) -> None:
    from session import evidence
    from session.preflight import checklist
    from tui.screens.modals import FormModal

    ledger = sample(tmp_path / "l.db", m.StepName.BASELINE)
    session = ledger.list(m.Session)[0]
    note = evidence.add_note(ledger, session, "ncu: 5 kernels per row")
    app = PaneApp(PreflightPane, ledger)
    async with app.run_test(size=(120, 60)) as pilot:
        await built(pilot, app.pane)
        app.pane.focus()
        await pilot.press("b")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, FormModal)
        form.query_one("#field-bottleneck", Field).value = "launch-bound"
        form.query_one("#field-evidence", Field).value = "five kernels per row"
        await pilot.press("ctrl+s")
        await pilot.pause()
        stored = ledger.get(m.Session, session.id)
        assert stored.bottleneck.value == "launch-bound"
        assert stored.bottleneck_evidence == "five kernels per row"
        app.pane.focus()
        await pilot.press("k")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, FormModal)
        assert len(form.query("Checkbox")) == 14
        form.query_one("#check-item3").value = True  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert [c.number for c in checklist(ledger, session) if c.done] == [3]
        # an answer links its evidence
        app.pane.query_one("#field-lifetime-kind", Field).value = "measured"
        app.pane.query_one("#field-lifetime-text", Field).value = "live for the whole call"
        app.pane.query_one("#field-lifetime-evidence_id", Field).value = note.id
        app.pane.focus()
        app.holder.got.clear()
        await pilot.press("ctrl+s")
        await pilot.pause()
        (msg,) = app.holder.got
        assert isinstance(msg, SaveModels)
        assert msg.items[0].evidence_id == note.id
    ledger.close()


@pytest.mark.asyncio
async def test_saving_untouched_unknown_answers_says_they_are_recorded_as_unknown(
    tmp_path: Path,
) -> None:
    """A new user read "an honest 'unknown' is allowed", pressed ctrl+s on the untouched
    form, got "Nothing changed." and "0 of 6 answered", and could not tell whether the
    unknowns counted. The words say it (session.preflight.NOTHING_TO_SAVE), and nothing
    is written."""
    ledger = sample(tmp_path / "l.db", m.StepName.BASELINE)
    app = PaneApp(PreflightPane, ledger)
    said: list[str] = []
    async with app.run_test(size=(120, 60)) as pilot:
        await built(pilot, app.pane)
        app.pane.notify = lambda message, **kw: said.append(str(message))  # type: ignore[method-assign]
        await pilot.press("ctrl+s")
        await pilot.pause()
        got = list(app.holder.got)
    ledger.close()
    assert got == []
    assert len(said) == 1 and "recorded as unknown" in said[0] and "(n)" in said[0], said
