"""The session screen: the rail of steps, the step in front, and live telemetry.

State lives in its base (tui.screens.session_base): the screen reads a `SessionView` from
the ledger after every change and hands it to the rail and the panes. Its parts, one job
each: the long work and its progress (session_engine), the forms and saves
(session_forms), the key actions and palette (session_actions), and what the panes ask
(session_panes).
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import ContentSwitcher, Static

from session import models as m
from session.api import LedgerError
from tui.screens.session_actions import KeyActions, key_of
from tui.screens.session_base import NARROW_BELOW, PANES, SessionScreenBase
from tui.screens.session_engine import EngineDone, EngineProgress, EngineWork, ExportDone
from tui.screens.session_forms import SessionForms, residual_choice
from tui.screens.session_keys import SESSION_BINDINGS
from tui.screens.session_panes import PaneRequests
from tui.widgets.footer import SteadyFooter
from tui.widgets.palette import ScreenCommands
from tui.widgets.rail import StepRail
from tui.widgets.telemetry import TelemetryPanel

__all__ = [
    "NARROW_BELOW",
    "PANES",
    "EngineDone",
    "EngineProgress",
    "EngineWork",
    "ExportDone",
    "KeyActions",
    "PaneRequests",
    "SessionForms",
    "SessionScreen",
    "SessionScreenBase",
    "key_of",
    "residual_choice",
]


class SessionScreen(KeyActions, PaneRequests):
    """The screen itself: its keys, its layout, and the first view read once mounted."""

    BINDINGS = SESSION_BINDINGS
    COMMANDS = {ScreenCommands}

    def compose(self) -> ComposeResult:
        yield Static("", id="title-bar")
        unreadable = Static("", id="unreadable")  # rows that do not read back, if any
        unreadable.display = False
        yield unreadable
        with Horizontal(id="main"):
            with Vertical(id="rail-box"):
                yield StepRail(id="rail")
            with ContentSwitcher(initial=f"step-{m.StepName.CONTRACT.value}", id="content"):
                for pane in PANES:
                    yield pane(self.context)
            with Vertical(id="telemetry-box"):
                yield TelemetryPanel(id="telemetry")
        yield SteadyFooter(compact=True)  # the most important keys; the palette has the rest

    def on_mount(self) -> None:
        self.context.ledger = self.ledger
        self.query_one("#rail-box").border_title = "Steps"
        self.query_one("#telemetry-box").border_title = "Telemetry"
        self._apply_width(self.app.size.width)
        panel = self.query_one(TelemetryPanel)
        app: Any = self.app
        panel.gpu_name = getattr(app, "gpu_name", "")
        panel.set_note(getattr(app, "telemetry_note", ""))
        panel.push_many(list(getattr(app, "telemetry_history", [])))
        panel.where = getattr(app, "telemetry_where", "")
        # The step in front is known only once the view is read: show no pane before it,
        # so that the first frame builds one step's body, not two.
        try:
            self.reload(show_pane=False)
        except LedgerError as exc:  # the session's own row does not read back
            self.cannot_read(exc)
            return
        self.goto(self.first_open_step(), focus=True)
