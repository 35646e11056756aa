"""The residual form opened for a broken variant (its check failed) does not default to
"moved as predicted": a new user's walk of `gpuopt demo` saw it do so."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import sample_session_screen, settle

from session import models as m
from tui.widgets.form import Field


@pytest.mark.asyncio
async def test_the_residual_form_of_a_broken_variant_does_not_default_to_as_predicted(
    tmp_path: Path,
) -> None:
    async with sample_session_screen(tmp_path) as (
        app,
        pilot,
        screen,
    ):  # no-max: FASTER, fewer operators, check failed
        assert screen.view is not None
        broken = next(v for v in screen.view.variants if v.name == "no-max")
        assert not all(c.passed for c in screen.view.correctness_of(broken.id))
        screen.ask_residual()
        await settle(pilot)
        assert app.screen.query_one("#field-variant", Field).value == broken.id
        chosen = app.screen.query_one("#field-residual", Field).value
        assert chosen not in ("", m.ResidualClass.AS_PREDICTED.value), chosen
        assert chosen != m.ResidualClass.METRIC_ONLY.value, chosen
