"""The session screen's state: the view read from the ledger after every change, the
rail, the title, the step in front. The screen's other parts (work, forms, keys, what the
panes ask) build on this one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Static

from session import models as m
from session.api import STEP_TITLES, Session
from session.read_model import (
    STEP_ORDER,
    SessionView,
    disposition_gates,
    load_view,
)
from tui.display import plain, shown
from tui.screens.modals import ErrorModal
from tui.screens.pane_messages import PaneContext
from tui.screens.step_base import StepPane
from tui.screens.steps.baseline import BaselinePane
from tui.screens.steps.contract import ContractPane
from tui.screens.steps.disposition import DispositionPane
from tui.screens.steps.hypotheses import HypothesesPane
from tui.screens.steps.preflight import PreflightPane
from tui.screens.steps.record import RecordPane
from tui.screens.steps.results import ResultsPane
from tui.screens.steps.round import RoundPane
from tui.widgets.rail import StepRail
from tui.widgets.telemetry import TelemetryPanel

# One pane per step, in the order of the method.
PANES: tuple[type[StepPane], ...] = (
    ContractPane,
    BaselinePane,
    PreflightPane,
    HypothesesPane,
    RoundPane,
    ResultsPane,
    DispositionPane,
    RecordPane,
)
NARROW_BELOW = 110  # columns: below them the layout is the narrow one


class SessionScreenBase(Screen[None]):
    """What the screen holds and shows; reads only, apart from the guard that refuses writes
    in review mode."""

    quit_when_done = False  # ctrl+q was answered "stop and quit": exit once the job ends

    def __init__(
        self,
        session_id: str | None,
        *,
        readonly: bool = False,
        draft: dict[str, str] | None = None,
        list_screen: Callable[[], Screen[Any]] | None = None,
    ) -> None:
        super().__init__()
        # what escape goes back to when nothing is below (the app's session list)
        self.list_screen = list_screen
        # what the panes know of the screen: kept here, read there
        self.context = PaneContext(readonly=readonly, draft=draft or {})
        self.session_id = session_id
        self.draft = self.context.draft
        self.view: SessionView | None = None
        self.current: m.StepName = m.StepName.CONTRACT
        self.stop_event = threading.Event()
        self._gates: dict[str, dict[m.DispositionChoice, list[str]]] = {}
        self._record_md: str | None = None

    @property
    def busy(self) -> str | None:
        return self.context.busy

    @busy.setter
    def busy(self, kind: str | None) -> None:
        self.context.busy = kind

    @property
    def readonly(self) -> bool:
        return self.context.readonly

    @readonly.setter
    def readonly(self, value: bool) -> None:
        self.context.readonly = value

    @property
    def ledger(self) -> Any:
        return self.app.ledger  # type: ignore[attr-defined]

    @property
    def api(self) -> Session:
        """The session API: the one door through which this screen changes the session."""
        return Session(self.ledger, self.session_id)

    def pane(self, step: m.StepName | None = None) -> StepPane:
        return self.query_one(f"#step-{(step or self.current).value}", StepPane)

    def cannot_read(self, exc: Exception) -> None:
        """Say which row cannot be read (table, rowid) and go back; nothing is written."""
        self.readonly = True

        def back(_: Any) -> None:
            if self.app.screen is self and len(self.app.screen_stack) > 2:
                self.app.pop_screen()

        self.app.push_screen(ErrorModal("This session cannot be read", str(exc)), back)

    def on_resize(self, event: events.Resize) -> None:
        self._apply_width(event.size.width)

    def _apply_width(self, width: int) -> None:
        narrow = width < NARROW_BELOW
        self.set_class(narrow, "-narrow")
        self.context.narrow = narrow
        self.query_one(TelemetryPanel).compact = narrow

    def first_open_step(self) -> m.StepName:
        if self.view is None:
            return m.StepName.CONTRACT
        if self.readonly:
            return m.StepName.RESULTS if self.view.rounds else m.StepName.CONTRACT
        for st in self.view.steps:
            if st.state is not m.StepState.DONE:
                return st.step
        return m.StepName.RECORD

    def reload(self, show_pane: bool = True) -> None:
        if self.session_id is None:
            self.view = None
        else:
            self.view = load_view(self.ledger, self.session_id)
        self._gates.clear()
        self._record_md = None
        rail = self.query_one(StepRail)
        if self.view is None:
            statuses = [
                m.StepStatus(
                    step=s,
                    state=m.StepState.BLOCKED
                    if s is not m.StepName.CONTRACT
                    else m.StepState.IN_PROGRESS,
                    reason="save the contract first" if s is not m.StepName.CONTRACT else "",
                )
                for s in STEP_ORDER
            ]
            rail.update_steps(statuses)
        else:
            v = self.view
            rail.update_steps(
                v.steps,
                {
                    m.StepName.HYPOTHESES: len(v.hypotheses),
                    m.StepName.ROUND: len(v.rounds),
                    m.StepName.DISPOSITION: len(v.dispositions),
                },
            )
        self.show_unreadable()
        self.update_title()
        if show_pane:
            self.pane().show(self.view)

    def show_unreadable(self) -> None:
        """Name each row of this session that does not read back; the rest is shown."""
        rows = self.view.unreadable if self.view is not None else []
        box = self.query_one("#unreadable", Static)
        box.display = bool(rows)
        if rows:
            lines = [plain(r, 1000) for r in rows]
            box.update(Text("\n".join(lines) + " (left out; the rest is shown)", style="yellow"))

    def update_title(self) -> None:
        # What the person must not miss (read-only, a job running) comes first: the rest is
        # cut with an ellipsis at the right edge of a narrow terminal, never the status.
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(" gpuopt", style="bold")
        if self.readonly:
            t.append(" · read-only", style="bold yellow")
        if self.busy:
            t.append(f" · {self.busy} running", style="bold yellow")
        v = self.view
        if v is None:
            t.append(" · new session", style="")
        else:
            t.append(" · ")
            t.append(shown(v.session.title))
            if v.rounds:
                t.append(f" · round {v.rounds[-1].number}")
            b = v.baseline
            repo = plain(v.session.repo.rstrip("/").rsplit("/", 1)[-1], 60)
            if b is not None:
                t.append(f" · baseline {plain(b.id[:8])}")
                t.append(
                    f" · {repo}@{plain(b.snapshot.commit[:7])}"
                    f"{'+dirty' if b.snapshot.dirty else ''}",
                    style="dim",
                )
            else:
                t.append(f" · {repo}", style="dim")
            gpu = getattr(self.app, "gpu_name", "")
            if gpu:
                t.append(f" · {plain(gpu)}", style="dim")
        self.query_one("#title-bar", Static).update(t)

    def goto(self, step: m.StepName, focus: bool = False) -> None:
        self.current = step
        switcher = self.query_one(ContentSwitcher)
        switcher.current = f"step-{step.value}"
        switcher.border_title = f"{STEP_ORDER.index(step) + 1} {STEP_TITLES[step]}"
        self.query_one(StepRail).set_current(step)
        pane = self.pane()
        pane.show(self.view)
        if focus:
            pane.request_focus()

    def _to_list(self) -> None:
        below = self.app.screen_stack[-2] if len(self.app.screen_stack) > 2 else None
        if below is not None:
            self.app.pop_screen()
            return
        if self.list_screen is not None:
            self.app.switch_screen(self.list_screen())
        elif len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    def _guard(self) -> bool:
        if self.readonly:
            self.notify("Read-only: nothing is written in review mode.", severity="warning")
            return False
        return True

    guard = _guard  # for the session's management (tui/screens/session_manage.py)

    def leave_deleted(self) -> None:
        """After this session was deleted: back to the list, nothing left to save."""
        self.session_id, self.view = None, None
        self._to_list()

    def show_error(self, title: str, message: str, detail: str = "") -> None:
        self.app.push_screen(ErrorModal(title, message, detail))

    def gates_for(self, v: m.Variant) -> dict[m.DispositionChoice, list[str]]:
        if v.id not in self._gates and self.view is not None:
            self._gates[v.id] = disposition_gates(self.ledger, self.view, v)
        return self._gates.get(v.id, {})

    def record_markdown(self) -> str:
        if self.view is None:
            return ""
        if self._record_md is None:
            try:
                self._record_md = self.api.record(self.view.session)
            except Exception as exc:
                self._record_md = f"The record could not be built: {exc}"
        return self._record_md

    def telemetry_sample(self, sample: m.TelemetrySample) -> None:
        self.query_one(TelemetryPanel).push(sample)
