"""Issue 22 Build 1: the baseline form in the app does what `gpuopt baseline` does: it
takes --max-runs, --threshold and --budget, refused with the session layer's words, and
a too-noisy baseline names the key that uses the band it supports."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample

from session import models as m
from tui.screens.pane_messages import StartBaseline
from tui.screens.steps.baseline import BaselinePane
from tui.widgets.form import Field


async def _typed(tmp_path: Path, **values: str) -> tuple[list[object], dict[str, str]]:
    ledger = sample(tmp_path / "l.db", m.StepName.CONTRACT)
    app = PaneApp(BaselinePane, ledger)
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
async def test_the_baseline_form_sends_max_runs_threshold_and_budget(tmp_path: Path) -> None:
    got, _ = await _typed(tmp_path, runs="12", max_runs="40", threshold="0.05", budget="600")
    assert len(got) == 1 and isinstance(got[0], StartBaseline)
    b = got[0]
    assert (b.runs, b.max_runs, b.threshold, b.budget_s) == (12, 40, 0.05, 600.0)


@pytest.mark.asyncio
async def test_blank_settings_mean_the_cli_defaults(tmp_path: Path) -> None:
    got, _ = await _typed(tmp_path)
    assert isinstance(got[0], StartBaseline)
    assert (got[0].max_runs, got[0].threshold, got[0].budget_s) == (None, None, None)


@pytest.mark.asyncio
async def test_a_bad_band_or_max_runs_is_refused_with_the_cores_words(tmp_path: Path) -> None:
    got, errors = await _typed(tmp_path, threshold="2")
    assert got == [] and "between 0 and 1" in errors["threshold"]
    got, errors = await _typed(tmp_path, runs="12", max_runs="9")
    assert got == [] and "below" in errors["max_runs"]
