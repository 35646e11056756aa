"""A step pane restyles itself alone when it gains or loses the focus (Textual's default
restyled every widget of its body, a tenth of a second on the Record step), and what is
then on screen is what a full repaint draws: the body shows the pane's new background."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scenes import Scene, _settled, drive, make_app
from textual.widget import Widget

from session import models as m
from tui.screens.step_base import StepPane


def frame(app: Any) -> list[list[tuple[str, str]]]:
    """Each cell run on screen: its text and its background."""
    return [
        [(seg.text, str(seg.style.bgcolor if seg.style else None)) for seg in strip]
        for strip in app.screen._compositor.render_strips()
    ]


async def repainted(pilot: Any) -> list[list[tuple[str, str]]]:
    """The screen drawn anew: every widget's styles applied and every line rendered."""
    app = pilot.app
    app.stylesheet.update(app.screen, animate=False)
    for widget in app.screen.walk_children(with_self=True):
        if isinstance(widget, Widget):
            widget.refresh()
    await _settled(pilot)
    return frame(app)


@pytest.mark.asyncio
async def test_a_pane_losing_and_taking_the_focus_shows_what_a_full_repaint_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    scene = Scene("focus", upto=m.StepName.RECORD, keys=("2",))  # the baseline: form, tables
    app = make_app(scene, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await drive(scene, pilot)
        pane = app.screen.query_one("#content").visible_content
        assert isinstance(pane, StepPane)
        pane.focus()
        await _settled(pilot)
        assert pane.has_focus
        walks: list[int] = []
        real = app.stylesheet.update_nodes

        def counted(nodes: Any, animate: bool = False) -> None:
            nodes = list(nodes)
            walks.append(len(nodes))
            real(nodes, animate=animate)

        monkeypatch.setattr(app.stylesheet, "update_nodes", counted)
        app.screen.query_one("#rail OptionList").focus()  # the pane loses the focus
        await _settled(pilot)
        assert not pane.has_focus
        assert walks and max(walks) < 20, walks  # not the body's hundreds of widgets
        monkeypatch.undo()
        blurred = frame(app)
        assert blurred == await repainted(pilot)
        pane.focus()  # and takes it back
        await _settled(pilot)
        focused = frame(app)
        assert focused != blurred  # the focus shows
        assert focused == await repainted(pilot)
