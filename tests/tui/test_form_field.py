"""A field given a value before its input is mounted keeps it instead of raising.

The app opened straight onto a step in front (the preflight, say) refreshed its fields
before their inputs were mounted and died with NoMatches."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input, Select

from tui.widgets.form import Field


def test_a_value_set_before_mounting_is_kept() -> None:
    text = Field("note", "Note")
    choice = Field("kind", "Kind", choices=[("Measured", "measured"), ("Unknown", "unknown")])
    text.value = "peak 2 GiB"
    choice.value = "measured"
    assert (text.initial, choice.initial) == ("peak 2 GiB", "measured")


@pytest.mark.asyncio
async def test_the_kept_value_is_shown_once_mounted() -> None:
    text = Field("note", "Note")
    choice = Field("kind", "Kind", choices=[("Measured", "measured"), ("Unknown", "unknown")])
    text.value, choice.value = "peak 2 GiB", "measured"

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield text
            yield choice

    async with Host().run_test() as pilot:
        await pilot.pause()
        assert text.query_one(Input).value == "peak 2 GiB"
        assert choice.query_one(Select).value == "measured"
        text.value = "now mounted"
        assert text.value == "now mounted"
