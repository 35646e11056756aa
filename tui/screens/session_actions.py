"""The session screen's key actions: steps, back, help, and the palette's commands."""

from __future__ import annotations

from functools import partial
from typing import Any

from textual.binding import Binding

from session import models as m
from session.api import STEP_TITLES, busy_leave_words
from session.read_model import STEP_ORDER
from tui.keymap import bindings_help, key_of_id, shown_key
from tui.screens.modals import ConfirmModal, HelpModal
from tui.screens.session_base import PANES
from tui.screens.session_engine import EngineWork
from tui.screens.session_forms import SessionForms
from tui.screens.session_manage import manage_commands
from tui.screens.step_base import StepPane
from tui.widgets.glossary import glossary
from tui.widgets.palette import PaletteCommand
from tui.widgets.rail import StepRail


class KeyActions(EngineWork, SessionForms):
    """What the screen's keys and the command palette do."""

    def step_action(self, step: m.StepName, action: str) -> None:
        """Go to a step and run one of its actions once its body is there."""
        self.goto(step, focus=True)
        pane = self.pane(step)
        pane.call_later(pane.run_action, action)

    def action_next_step(self) -> None:
        i = STEP_ORDER.index(self.current)
        self.goto(STEP_ORDER[min(i + 1, len(STEP_ORDER) - 1)], focus=True)

    def action_prev_step(self) -> None:
        i = STEP_ORDER.index(self.current)
        self.goto(STEP_ORDER[max(i - 1, 0)], focus=True)

    def action_goto(self, index: int) -> None:
        self.goto(STEP_ORDER[index], focus=True)

    def action_back(self) -> None:
        """Out of a field to its step; from the step back to the session list (asked first
        when a form holds unsaved text; refused while a baseline or round runs)."""
        focused = self.app.focused
        pane = self.pane()
        if focused is not None and focused is not pane and pane in focused.ancestors:
            pane.focus()
            return
        if self.busy:
            stop = self._stop_key(self.busy)
            self.notify(busy_leave_words(self.busy, stop), severity="warning")
            return
        self.leave(self._to_list)

    def _stop_key(self, busy: str) -> str:
        """The key that stops the running job (its step's, as remapped)."""
        stop_id = f"{busy}.stop"
        for pane in PANES:
            if any(isinstance(b, Binding) and b.id == stop_id for b in pane.BINDINGS):
                return key_of_id(self.app, list(pane.BINDINGS), stop_id)  # type: ignore[arg-type]
        return "s"

    def leave(self, then: Any) -> None:
        """Run `then` once nothing typed would be lost: asked when a pane holds unsaved text."""
        unsaved = [p for p in self.query(StepPane) if p.built_body and p.unsaved()]
        if not unsaved:
            then()
            return
        names = ", ".join(STEP_TITLES[p.step] for p in unsaved)

        def answered(discard: bool | None) -> None:
            if discard:
                then()

        self.app.push_screen(
            ConfirmModal(f"{names}: what you typed is not saved. Discard it?"), answered
        )

    def action_focus_rail(self) -> None:
        self.query_one("#rail OptionList").focus()

    def action_reload(self) -> None:
        self.reload()

    def action_help(self) -> None:
        pane = self.pane()
        title = f"{STEP_ORDER.index(self.current) + 1} {STEP_TITLES[self.current]}"
        keys = bindings_help(self.app)  # the keys active now, as remapped
        self.app.push_screen(HelpModal(title, pane.help_text(), keys, glossary()))

    def palette_commands(self) -> list[PaletteCommand]:
        """Every action of every step, each run on its step, plus the screen's own."""
        out: list[PaletteCommand] = []
        for i, pane_type in enumerate(PANES):
            step = pane_type.step
            title = STEP_TITLES[step]
            out.append(
                PaletteCommand(
                    f"Go to {title}",
                    f"step {i + 1} · key {i + 1}",
                    partial(self.action_goto, i),
                    words="step",
                )
            )
            for b in pane_type.BINDINGS:
                if not isinstance(b, Binding) or (self.readonly and b.action in pane_type.WRITES):
                    continue
                out.append(
                    PaletteCommand(
                        b.tooltip or f"{title}: {b.description}",
                        f"{title} · key {key_of(self.app, b)}",
                        partial(self.step_action, step, b.action),
                        words=b.description,
                    )
                )
        for b in self.BINDINGS:
            if isinstance(b, Binding) and b.tooltip:
                out.append(
                    PaletteCommand(
                        b.tooltip,
                        f"key {key_of(self.app, b)}",
                        partial(self.run_action, b.action),
                        words=b.description,
                    )
                )
        if not self.readonly:
            out.append(
                PaletteCommand(
                    "Add a variant from a patch file",
                    "Round · a file picker, then the form",
                    self.ask_variant_patch,
                    words="patch diff variant file",
                )
            )
        if self.busy:
            out.append(
                PaletteCommand(
                    f"Stop the {self.busy} after the current run", "key s", self.stop_work
                )
            )
        return out + manage_commands(self)

    def on_step_rail_chosen(self, event: StepRail.Chosen) -> None:
        self.goto(event.step, focus=True)


def key_of(app: Any, b: Binding) -> str:
    """A binding's first key as shown (after the person's keymap, if it remaps this id)."""
    return shown_key(app, b)
