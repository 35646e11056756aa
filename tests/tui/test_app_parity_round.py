"""Issue 19 item 5 / issue 22 Build 1: the round form in the app does what `gpuopt round`
does. It takes a threshold and a time budget, its block minimum is the design's (the
session layer's one rule, not the app's old 6), and a too-noisy baseline's advised band
is one key away."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample

from session import models as m
from session.api import Session
from session.blocks import fewest_blocks
from tui.screens.pane_messages import StartRound
from tui.screens.steps.round import RoundPane
from tui.widgets.form import Field


def test_the_block_minimum_is_the_designs() -> None:
    # 10 to 30 blocks look at 10, 15, 20, 25, 30: each look's interval needs 8 pairs
    assert fewest_blocks(10, 30) == 8
    assert fewest_blocks(6, 30) == 8
    assert fewest_blocks(6, 6) == 6


async def _typed(tmp_path: Path, **values: str) -> tuple[list[object], dict[str, str]]:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        for name, value in values.items():
            app.pane.query_one(f"#field-{name}", Field).value = value
        await pilot.press("r")
        await pilot.pause()
        got = list(app.holder.got)
        errors = {f.field_name: str(f.query_one(".error").render()) for f in app.pane.query(Field)}
    ledger.close()
    return got, errors


@pytest.mark.asyncio
async def test_the_round_form_sends_threshold_and_budget(tmp_path: Path) -> None:
    got, _ = await _typed(tmp_path, threshold="0.05", budget="600")
    assert len(got) == 1 and isinstance(got[0], StartRound)
    assert (got[0].min_blocks, got[0].max_blocks) == (10, 30)
    assert (got[0].threshold, got[0].budget_s) == (0.05, 600.0)


@pytest.mark.asyncio
async def test_blank_threshold_and_budget_mean_the_contracts_and_none(tmp_path: Path) -> None:
    got, _ = await _typed(tmp_path)
    assert isinstance(got[0], StartRound)
    assert (got[0].threshold, got[0].budget_s) == (None, None)


@pytest.mark.asyncio
async def test_six_blocks_of_a_30_block_design_are_refused_as_the_design_says(
    tmp_path: Path,
) -> None:
    """The app accepted 6..30 (its own minimum was 6); the design's is 8."""
    got, errors = await _typed(tmp_path, min_blocks="6", max_blocks="30")
    assert got == []
    assert "min-blocks >= 8" in errors["max_blocks"]


@pytest.mark.asyncio
async def test_a_threshold_out_of_range_is_refused_with_the_cores_words(tmp_path: Path) -> None:
    got, errors = await _typed(tmp_path, threshold="2")
    assert got == []
    assert "between 0 and 1" in errors["threshold"]


@pytest.mark.asyncio
async def test_the_advised_band_is_one_key_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """f fills the band the baseline advises (`Session.advised_threshold`, the words the
    baseline's too-noisy warning gives as --threshold), and r runs at it."""
    monkeypatch.setattr(Session, "advised_threshold", lambda self, s, b: 0.045)
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        await pilot.press("f", "r")
        await pilot.pause()
        got = list(app.holder.got)
        typed = app.pane.query_one("#field-threshold", Field).value
    ledger.close()
    assert typed == "0.045"
    assert isinstance(got[-1], StartRound) and got[-1].threshold == 0.045


@pytest.mark.asyncio
async def test_r_past_the_advice_asks_before_a_round_narrower_than_the_baseline_supports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new user read "press f to use the band it supports, then r", pressed r alone, and
    the round ran at ±2% without a word: 30 blocks, the control INCONCLUSIVE. r now asks
    (the session layer's words); no runs nothing, yes runs at the band chosen."""
    from session.api import narrow_band_question
    from tui.screens.modals import ConfirmModal

    monkeypatch.setattr(Session, "advised_threshold", lambda self, s, b: 0.06)
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal), app.screen
        asked = app.screen.question
        await pilot.press("n")
        await pilot.pause()
        assert app.holder.got == []  # no: nothing runs
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        got = list(app.holder.got)
    ledger.close()
    assert "too noisy for ±2%" in asked and "±6%" in asked and "f:" in asked, asked
    assert len(got) == 1 and isinstance(got[0], StartRound) and got[0].threshold is None
    assert narrow_band_question(0.06, 0.06, 0.06, RoundPane_keys()) == ""  # at the band: none


def RoundPane_keys():
    from session.api import RoundKeys

    return RoundKeys()


@pytest.mark.asyncio
async def test_after_f_the_next_line_says_the_round_is_set_to_the_supported_band(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After f, Next still said "press f to use the band it supports": stale advice."""
    from textual.widgets import Static

    from tui.screens.modals import ConfirmModal

    monkeypatch.setattr(Session, "advised_threshold", lambda self, s, b: 0.06)
    ledger = sample(tmp_path / "l.db", m.StepName.ROUND)  # variants, no round yet
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        before = str(app.pane.query_one(".next", Static).content)
        await pilot.press("f")
        await pilot.pause()
        after = str(app.pane.query_one(".next", Static).content)
        await pilot.press("r")
        await pilot.pause()
        asked = isinstance(app.screen, ConfirmModal)
        got = list(app.holder.got)
    ledger.close()
    assert "press f" in before, before
    assert "press f" not in after and "±6%" in after and "press r" in after, after
    assert not asked and isinstance(got[-1], StartRound) and got[-1].threshold == 0.06
