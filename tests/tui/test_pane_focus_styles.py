"""Two redraws the app skips, and the rules that make skipping them safe.

A step pane's focus restyles the pane alone, not the widgets of its body (StepPane.
watch_has_focus): right only while no CSS rule styles a widget by an ancestor pane's
focus. The key bar is composed again only when the keys it shows change (SteadyFooter):
after any key, it shows what a fresh compose would show.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.css.model import SelectorType
from textual.widgets._footer import FooterKey
from tui_helpers import sample_session_screen, settle, step_keys

from tui.screens.step_base import StepPane
from tui.widgets.footer import SteadyFooter


def _could_be_a_pane(part: Any, panes: list[StepPane]) -> bool:
    if part.type is SelectorType.UNIVERSAL:
        return True
    if part.type is SelectorType.TYPE:
        return any(part.name in pane._css_type_names for pane in panes)
    if part.type is SelectorType.CLASS:
        return any(part.name in pane.classes for pane in panes)
    if part.type is SelectorType.ID:
        return any(part.name == pane.id for pane in panes)
    return True  # a kind not known here: assume it could


@pytest.mark.asyncio
async def test_no_rule_styles_a_widget_by_a_step_panes_focus(tmp_path: Path) -> None:
    async with sample_session_screen(tmp_path) as (app, _pilot, screen):
        panes = list(screen.query(StepPane))
        assert len(panes) == 8
        found = []
        for rule in app.stylesheet.rules:
            for selectors in rule.selector_set:
                for part in selectors.selectors[:-1]:  # an ancestor's part of the selector
                    focus = part.pseudo_classes & {"focus", "focus-within"}
                    if focus and _could_be_a_pane(part, panes):
                        found.append(selectors.css)
        assert found == [], found
        # the rules of this kind that exist (a Select's, a table's) are seen by the test
        assert any(
            part.pseudo_classes & {"focus"}
            for rule in app.stylesheet.rules
            for selectors in rule.selector_set
            for part in selectors.selectors[:-1]
        )


@pytest.mark.asyncio
async def test_a_focused_panes_background_reaches_the_lines_of_its_body(tmp_path: Path) -> None:
    """The body's lines are drawn over the pane's background: when the pane's focus
    changes it, they are drawn again (restyling the pane alone left them stale)."""
    async with sample_session_screen(tmp_path) as (_app, pilot, screen):
        await step_keys(pilot, "2")
        await settle(pilot)
        pane = screen.pane()
        words = pane.query_one(".guidance")
        x, y = words.region.x + 1, words.region.y

        def background() -> Any:
            return screen.get_style_at(x, y).bgcolor

        screen.set_focus(None)
        await settle(pilot)
        plain = background()
        pane.focus()
        await settle(pilot)
        assert background() != plain  # .step-pane:focus { background: $surface; }
        assert background() == pane.styles.background.rich_color
        screen.set_focus(None)
        await settle(pilot)
        assert background() == plain


def _expected_keys(app: Any) -> list[tuple[str, str, bool]]:
    """The (key, words, disabled) a fresh Footer shows: the first shown binding of each
    action, in order, then the palette's key (the app's bindings have no groups)."""
    by_action: dict[str, tuple[str, str, bool]] = {}
    palette = []
    for key, (_node, binding, enabled, _tip) in app.screen.active_bindings.items():
        assert binding.group is None
        if binding.show:
            by_action.setdefault(binding.action, (binding.key, binding.description, not enabled))
        if key == app.COMMAND_PALETTE_BINDING:
            palette = [(binding.key, binding.description, not enabled)]
    return [*by_action.values(), *palette]


def _shown_keys(footer: SteadyFooter) -> list[tuple[str, str, bool]]:
    return [(k.key, k.description, k.disabled) for k in footer.query(FooterKey)]


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_key_bar_always_shows_the_keys_a_fresh_one_would(tmp_path: Path) -> None:
    async with sample_session_screen(tmp_path) as (app, pilot, screen):
        footer = screen.query_one(SteadyFooter)
        for key in "12345678":
            await step_keys(pilot, key)
            await settle(pilot)
            assert _shown_keys(footer) == _expected_keys(app), key
        before = list(footer.query(FooterKey))
        await step_keys(pilot, "8")  # the same step again: the same keys, not rebuilt
        await settle(pilot)
        assert list(footer.query(FooterKey)) == before
        assert all(a is b for a, b in zip(footer.query(FooterKey), before, strict=True))
