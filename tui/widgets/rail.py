"""The rail of the eight steps: each with its state, the highlighted one's gate reason below."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from session import models as m
from session.api import STEP_TITLES
from session.read_model import STEP_ORDER
from tui.display import plain

# A step not reached yet is not a fault: neutral glyphs for it, colour only for what is
# done or under way. The words are the legend's (under the rail and in the `?` help).
GLYPH: dict[m.StepState, tuple[str, str]] = {
    m.StepState.DONE: ("✓", "green"),
    m.StepState.IN_PROGRESS: ("•", "yellow"),
    m.StepState.BLOCKED: ("○", "dim"),
    m.StepState.NOT_STARTED: ("·", "dim"),
}
GLYPH_WORDS: dict[m.StepState, str] = {
    m.StepState.DONE: "done",
    m.StepState.IN_PROGRESS: "under way",
    m.StepState.BLOCKED: "waits for an earlier step",
    m.StepState.NOT_STARTED: "not started",
}
CURRENT_GLYPH = "▶"


def legend() -> Text:
    """What the rail's glyphs mean, one per line."""
    t = Text()
    t.append(f"{CURRENT_GLYPH} ", style="bold")
    t.append("the step in front\n")
    for state, (glyph, style) in GLYPH.items():
        t.append(f"{glyph} ", style=style)
        t.append(GLYPH_WORDS[state] + "\n")
    t.rstrip()
    return t


class StepRail(Vertical):
    """The steps, their states, and why the highlighted one is where it is."""

    DEFAULT_CSS = """
    StepRail { height: 1fr; }
    StepRail > OptionList {
        height: 8; border: none; padding: 0; background: transparent;
        overflow: hidden hidden; scrollbar-size: 0 0;
    }
    StepRail > OptionList:focus { border: none; background-tint: $foreground 5%; }
    StepRail > #gate { height: auto; padding: 0 1; color: $text-muted; }
    StepRail > #legend { height: auto; padding: 0 1; color: $text-muted; dock: bottom; }
    """

    class Chosen(Message):
        def __init__(self, step: m.StepName) -> None:
            super().__init__()
            self.step = step

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.statuses: dict[m.StepName, m.StepStatus] = {
            s: m.StepStatus(step=s) for s in STEP_ORDER
        }
        self.counts: dict[m.StepName, int] = {}
        self.current: m.StepName = m.StepName.CONTRACT

    def compose(self) -> ComposeResult:
        yield OptionList(*[Option(self._prompt(s), id=s.value) for s in STEP_ORDER], id="steps")
        yield Static("", id="gate")
        yield Static(_short_legend(), id="legend")

    def _prompt(self, step: m.StepName) -> Text:
        st = self.statuses.get(step, m.StepStatus(step=step))
        glyph, style = GLYPH[st.state]
        t = Text(no_wrap=True, overflow="ellipsis")
        if step is self.current:
            t.append(f"{CURRENT_GLYPH} ", style="bold")
        else:
            t.append(glyph + " ", style=style)
        t.append(STEP_TITLES[step], style="bold" if step is self.current else "")
        n = self.counts.get(step)
        if n:
            t.append(f" {n}", style="dim")
        return t

    def update_steps(
        self, statuses: list[m.StepStatus], counts: dict[m.StepName, int] | None = None
    ) -> None:
        self.statuses = {s.step: s for s in statuses}
        self.counts = counts or {}
        self._redraw()

    def set_current(self, step: m.StepName) -> None:
        self.current = step
        ol = self.query_one(OptionList)
        ol.highlighted = STEP_ORDER.index(step)
        self._redraw()

    def _redraw(self) -> None:
        ol = self.query_one(OptionList)
        for step in STEP_ORDER:
            ol.replace_option_prompt(step.value, self._prompt(step))
        self._show_gate()

    def _show_gate(self) -> None:
        ol = self.query_one(OptionList)
        idx = ol.highlighted if ol.highlighted is not None else STEP_ORDER.index(self.current)
        step = STEP_ORDER[idx]
        st = self.statuses.get(step)
        gate = self.query_one("#gate", Static)
        if st is None or not st.reason:
            gate.update("")
            return
        reason = plain(st.reason, 1000)  # a gate's reason may name stored things
        gate.update(Text(reason, style="yellow" if st.state is m.StepState.BLOCKED else "dim"))

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self._show_gate()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.post_message(self.Chosen(m.StepName(event.option.id)))


def _short_legend() -> Text:
    """The legend in the rail's own width, two lines (the `?` help says it in full)."""
    t = Text(no_wrap=True, overflow="ellipsis")
    for line in (
        ((m.StepState.DONE, "done "), (m.StepState.IN_PROGRESS, "open")),
        ((m.StepState.BLOCKED, "later"), (None, "here")),
    ):
        for j, (state, word) in enumerate(line):
            glyph, style = GLYPH[state] if state is not None else (CURRENT_GLYPH, "bold")
            t.append((" " if j else "") + glyph, style=style)
            t.append(word, style="dim")
        t.append("\n")
    t.rstrip()
    return t
