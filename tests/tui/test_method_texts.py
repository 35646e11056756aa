"""The app shows the method's own words: every step's title, the preflight questions, the
answer kinds, the concern areas, the residual classes and the disposition choices are the
session layer's texts, character for character (one source: `session/`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text
from textual.widgets import ContentSwitcher, OptionList, Static
from tui_helpers import sample_session_screen, settle, step_keys

from session import models as m
from session.concerns import LABELS as CONCERN_LABELS
from session.dispositions import DESCRIPTIONS as CHOICE_TEXTS
from session.preflight import KIND_LABELS, QUESTIONS
from session.read_model import STEP_ORDER
from session.steps import LABELS
from tui.screens.modals import FormModal
from tui.screens.session import residual_choice
from tui.widgets.form import Field


def _plain(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Text):
        return content.plain
    console = Console(width=400, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(content)
    return console.export_text()


def _choices(field: Field) -> list[tuple[str, str]]:
    return [(str(label), str(value)) for label, value in (field.choices or [])]


@pytest.mark.asyncio
@pytest.mark.slow
async def test_every_step_shows_the_session_layers_title_and_questions(tmp_path: Path) -> None:
    async with sample_session_screen(tmp_path) as (_app, pilot, screen):
        rail = [_plain(o.prompt) for o in screen.query_one("#steps", OptionList)._options]
        for i, step in enumerate(STEP_ORDER):
            await step_keys(pilot, str(i + 1))
            await settle(pilot)
            switcher = screen.query_one(ContentSwitcher)
            assert switcher.current == f"step-{step.value}"
            assert switcher.border_title == f"{i + 1} {LABELS[step]}"
            assert LABELS[step] in rail[i], (step, rail[i])
        await step_keys(pilot, "3")
        await settle(pilot)
        for q, text in QUESTIONS.items():
            label = screen.query_one(f"#q-{q.value} .question-text", Static)
            assert _plain(label.content) == f"{q.value}  {text}"  # whole, wrapped
            kind = screen.query_one(f"#field-{q.value}-kind", Field)
            assert _choices(kind) == [(KIND_LABELS[k], k.value) for k in KIND_LABELS]
            area = screen.query_one(f"#field-{q.value}-concern_area", Field)
            assert _choices(area) == [(CONCERN_LABELS[a], a.value) for a in CONCERN_LABELS]
        assert len(screen.query(".question")) == len(m.PreflightQuestion)
        # the disposition table names each choice in the session layer's words
        await step_keys(pilot, "7")
        await settle(pilot)
        shown = " ".join(_plain(s.content) for s in screen.query("#step-disposition Static"))
        for choice, text in CHOICE_TEXTS.items():
            assert text in shown, (choice, text)


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_forms_offer_the_session_layers_residual_and_choice_texts(
    tmp_path: Path,
) -> None:
    async with sample_session_screen(tmp_path) as (app, pilot, screen):
        screen.ask_residual()
        await settle(pilot)
        residual = app.screen.query_one("#field-residual", Field)
        assert _choices(residual) == [(residual_choice(c), c.value) for c in m.ResidualClass]
        await pilot.press("escape")
        await settle(pilot)
        view = screen.view
        assert view is not None
        screen.ask_disposition(view.variants[0])
        await settle(pilot)
        choice = app.screen.query_one("#field-choice", Field)
        assert _choices(choice) == [(CHOICE_TEXTS[c], c.value) for c in m.DispositionChoice]


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_status_form_refuses_a_blank_reason_in_the_session_layers_words(
    tmp_path: Path,
) -> None:
    async with sample_session_screen(tmp_path) as (app, pilot, screen):
        assert screen.view is not None
        h = screen.view.hypotheses[0]
        screen.ask_hypothesis_status(h)
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, FormModal)
        assert "say why the status changes" in _plain(
            modal.query_one("#form-error", Static).content
        )
        assert app.ledger.get(m.Hypothesis, h.id).status is h.status


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_decide_form_names_what_a_gate_lacks_by_its_fields(tmp_path: Path) -> None:
    async with sample_session_screen(tmp_path) as (app, pilot, screen):
        assert screen.view is not None
        variant = screen.view.variants[0]
        screen.ask_disposition(variant)
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, FormModal)
        modal.query_one("#field-choice", Field).value = "keep-guarded"
        await pilot.press("ctrl+s")
        await settle(pilot)
        refused = _plain(app.screen.query_one("#form-error", Static).content)
        assert "Refused" in refused and "--" not in refused, refused
        kept = app.ledger.list(m.Disposition, variant_id=variant.id)
        assert all(d.choice is not m.DispositionChoice.KEEP_GUARDED for d in kept)


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_decide_form_says_what_an_open_choice_still_needs_of_the_form(
    tmp_path: Path,
) -> None:
    """A new user read "✓ keep as the default path: open", saved, and was refused for the
    Guards and Fallback fields. An open choice names what the form must still hold
    (session.read_model.disposition_form_needs), by the form's field names."""
    async with sample_session_screen(tmp_path) as (app, pilot, screen):
        assert screen.view is not None
        fused = next(v for v in screen.view.variants if v.name == "fused")
        screen.ask_disposition(fused)
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, FormModal)
        note = _plain(modal.query_one("#dialog-note", Static).content)
    line = next(ln for ln in note.splitlines() if "keep as the default path" in ln)
    assert line.startswith("✓") and "fill the Guards field, the Fallback field" in line, line
    assert "--" not in note, note
