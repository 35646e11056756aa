"""The session screen: the rail of steps, the step in front, and live telemetry.

State lives here: the screen reads a `SessionView` from the ledger after every change and
hands it to the rail and the panes. Long work (baseline, round) runs in thread workers that
open their own ledger connection, never touch a widget, and report through messages.
"""

from __future__ import annotations

import textwrap
import threading
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Static
from textual.worker import Worker, WorkerState

from session import hypotheses
from session import models as m
from session.api import (
    ENGINE_ERRORS,
    ConflictError,
    Ledger,
    LedgerError,
    PreflightEdit,
    Result,
    Session,
)
from session.dispositions import DESCRIPTIONS as CHOICE_WORDS
from session.edits import EditConflict
from session.errors import GateRefusal
from session.gates import in_form
from session.read_model import (
    STEP_ORDER,
    SessionView,
    disposition_gates,
    load_view,
    residual_suggestion,
)
from session.refs import SAME_TREE, list_refs
from session.residuals import SHORT as RESIDUAL_WORDS
from session.steps import LABELS as STEP_TITLES
from tui.display import plain, shown
from tui.keymap import bindings_help, shown_key
from tui.screens.modals import ConfirmModal, ConflictModal, ErrorModal, FormModal, HelpModal
from tui.screens.pane_messages import (
    AddHypothesis,
    AskDisposition,
    AskEvidence,
    AskHypothesisStatus,
    AskResidual,
    AskVariant,
    EditHypothesis,
    ExportRecord,
    PaneContext,
    ReloadView,
    SaveModels,
    SaveSession,
    StartBaseline,
    StartRound,
    StopWork,
)
from tui.screens.session_keys import SESSION_BINDINGS
from tui.screens.session_manage import export_dir, manage_commands
from tui.screens.step_base import StepPane
from tui.screens.steps.baseline import BaselinePane
from tui.screens.steps.contract import ContractPane
from tui.screens.steps.disposition import FORM_LABELS, DispositionPane
from tui.screens.steps.hypotheses import HypothesesPane
from tui.screens.steps.preflight import PreflightPane
from tui.screens.steps.record import RecordPane
from tui.screens.steps.results import ResultsPane
from tui.screens.steps.round import RoundPane
from tui.widgets.evidence_form import evidence_form
from tui.widgets.file_picker import FilePicker
from tui.widgets.form import Field
from tui.widgets.glossary import glossary
from tui.widgets.palette import PaletteCommand, ScreenCommands
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
NARROW_BELOW = 110
REFS_NAMED = 4  # refs named in the add-variant form's note (the list holds them all)


class EngineProgress(Message):
    def __init__(self, kind: str, progress: Any) -> None:
        super().__init__()
        self.kind = kind
        self.progress = progress


class EngineDone(Message):
    def __init__(self, kind: str, message: str, error: str = "") -> None:
        super().__init__()
        self.kind = kind
        self.message = message
        self.error = error


class ExportDone(Message):
    """The export thread's end: the file written, or why not."""

    def __init__(self, path: str, error: str = "") -> None:
        super().__init__()
        self.path = path
        self.error = error


class SessionScreen(Screen[None]):
    BINDINGS = SESSION_BINDINGS
    COMMANDS = {ScreenCommands}

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

    # ------------------------------------------------------------------ layout

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
        yield Footer(compact=True)  # the most important keys; the palette has the rest

    @property
    def ledger(self) -> Any:
        return self.app.ledger  # type: ignore[attr-defined]

    @property
    def api(self) -> Session:
        """The session API: the one door through which this screen changes the session."""
        return Session(self.ledger, self.session_id)

    def pane(self, step: m.StepName | None = None) -> StepPane:
        return self.query_one(f"#step-{(step or self.current).value}", StepPane)

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

    # ------------------------------------------------------------------ state

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

    # ------------------------------------------------------------------ navigation

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
            self.notify(f"A {self.busy} is running: press s to stop it first.", severity="warning")
            return
        self.leave(self._to_list)

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

    def _to_list(self) -> None:
        below = self.app.screen_stack[-2] if len(self.app.screen_stack) > 2 else None
        if below is not None:
            self.app.pop_screen()
            return
        if self.list_screen is not None:
            self.app.switch_screen(self.list_screen())
        elif len(self.app.screen_stack) > 1:
            self.app.pop_screen()

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

    def ask_evidence(self, hypothesis: m.Hypothesis | None) -> None:
        view = self.view
        if view is None or not self._guard():
            return
        title, fields, submit, note = evidence_form(self.ledger, view, hypothesis)
        self.app.push_screen(
            FormModal(title, fields, submit, note=note),
            lambda r: self._after(r, "evidence added"),
        )

    def on_step_rail_chosen(self, event: StepRail.Chosen) -> None:
        self.goto(event.step, focus=True)

    # ------------------------------------------------------------------ what the panes ask

    def on_save_session(self, msg: SaveSession) -> None:
        self.save_session(msg.session)

    def on_save_models(self, msg: SaveModels) -> None:
        self.save_models(*msg.items, note=msg.note, reads=msg.reads)

    def on_reload_view(self, _msg: ReloadView) -> None:
        self.reload()

    def on_add_hypothesis(self, msg: AddHypothesis) -> None:
        similar = self.add_hypothesis(msg.values)
        if similar is not None:
            self.query_one(HypothesesPane).hypothesis_added(similar)

    def on_edit_hypothesis(self, msg: EditHypothesis) -> None:
        self.edit_hypothesis(msg.hypothesis, msg.values)

    def on_ask_hypothesis_status(self, msg: AskHypothesisStatus) -> None:
        self.ask_hypothesis_status(msg.hypothesis)

    def on_start_baseline(self, msg: StartBaseline) -> None:
        self.start_baseline(
            msg.runs,
            msg.warmup,
            max_runs=msg.max_runs,
            threshold=msg.threshold,
            budget_s=msg.budget_s,
        )

    def on_start_round(self, msg: StartRound) -> None:
        self.start_round(msg.min_blocks, msg.max_blocks, msg.threshold, msg.budget_s)

    def on_stop_work(self, _msg: StopWork) -> None:
        self.stop_work()

    def on_ask_variant(self, _msg: AskVariant) -> None:
        self.ask_variant()

    def on_ask_residual(self, _msg: AskResidual) -> None:
        self.ask_residual()

    def on_ask_evidence(self, msg: AskEvidence) -> None:
        self.ask_evidence(msg.hypothesis)

    def on_ask_disposition(self, msg: AskDisposition) -> None:
        self.ask_disposition(msg.variant)

    def on_export_record(self, _msg: ExportRecord) -> None:
        self.export_record()

    # ------------------------------------------------------------------ writes

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

    def save_session(
        self, session: m.Session, edited: tuple[str, ...] = ("title", "repo", "contract")
    ) -> None:
        """Write the session only over the version this screen read: an edit made
        elsewhere meanwhile (e.g. `gpuopt preflight --bottleneck`) is never undone."""

        if not self._guard():
            return
        read = self.view.session_read if self.view is not None else None
        try:
            self.api.save(session, read)
        except ConflictError as exc:
            self.show_conflict(exc, session, edited)
            return
        except Exception as exc:  # a locked or read-only file: say so, keep the form
            self.show_error("The session was not saved", str(exc))
            return
        self._saved(session)

    def show_conflict(self, exc: Any, mine: m.Session, edited: tuple[str, ...]) -> None:
        """What changed elsewhere; reload, or put the fields this form edits onto it."""
        current = exc.current
        changed = [(name, _field_text(getattr(current, name, ""))) for name in exc.changed_fields]

        def chosen(choice: str | None) -> None:
            if choice == "reload":
                self.reload()
                self.notify("Reloaded: the stored version is shown.", markup=False)
            elif choice == "merge":
                merged = m.Session.model_validate(
                    {**current.model_dump(), **{f: getattr(mine, f) for f in edited}}
                )
                self.reload(show_pane=False)  # the version the merge is written over
                self.save_session(merged, edited)

        self.app.push_screen(ConflictModal("session", changed, list(edited)), chosen)

    def _saved(self, session: m.Session) -> None:
        first = self.session_id is None
        self.session_id = session.id
        self.reload()
        self.notify(f"Session {plain(session.id)} saved.", markup=False)
        if first:
            self.goto(m.StepName.BASELINE, focus=True)

    def save_models(
        self, *items: Any, note: str = "saved", reads: dict[Any, Any] | None = None
    ) -> None:
        """Save records together; a preflight answer through the session's own door (field
        by field onto the newest stored answer: one changed elsewhere is refused)."""
        if not self._guard() or not items or self.view is None:
            return
        session = self.view.session
        answers = [i for i in items if isinstance(i, m.PreflightAnswer)]
        edits = [
            PreflightEdit(a.question, a.kind, a.text, a.evidence_id, a.concern_area)
            for a in answers
        ]
        read = {a.question: (reads or {}).get(a.question, a) for a in answers}
        try:
            if edits:
                self.api.answer_preflight(session, edits, read)
            rest = [i for i in items if not isinstance(i, m.PreflightAnswer)]
            if rest:
                self.api.put(*rest)
        except Exception as exc:
            self.show_error("Nothing was saved", str(exc))
            return
        self.reload()
        self.notify(plain(note, 1000), markup=False)

    def add_hypothesis(self, vals: dict[str, Any]) -> list[m.Hypothesis] | None:
        if not self._guard() or self.view is None:
            return None
        try:
            h, similar = self.api.add_hypothesis(self.view.session, **vals).value
        except ENGINE_ERRORS as exc:
            self.show_error("Hypothesis not saved", str(exc))
            return None
        self.reload()
        self.notify(
            f"Hypothesis {plain(h.id[:8])} saved."
            + (f" {len(similar)} similar rejected before." if similar else ""),
            markup=False,
        )
        return list(similar)

    def edit_hypothesis(self, h: m.Hypothesis, vals: dict[str, Any]) -> None:
        """Write only the fields edited in the form, onto the stored hypothesis: a field
        the command line changed meanwhile stays; one changed on both sides is asked."""
        if not self._guard():
            return
        edited = {
            k: v for k, v in vals.items() if _form_value(getattr(h, k, None)) != _form_value(v)
        }
        if not edited:
            self.notify("Nothing changed.", markup=False)
            return
        try:
            new = self.api.edit_hypothesis(h, "edited in the app", **edited).value
        except EditConflict as exc:
            stored = exc.current
            assert isinstance(stored, m.Hypothesis)

            def chosen(choice: str | None) -> None:
                if choice == "reload":
                    self.reload()
                elif choice == "merge":  # mine over theirs, read from the stored one
                    self.edit_hypothesis(stored, edited)

            changed = [(k, _field_text(getattr(stored, k))) for k in exc.changed_fields]
            self.app.push_screen(ConflictModal("hypothesis", changed, list(edited)), chosen)
            return
        except ENGINE_ERRORS as exc:
            self.show_error("Hypothesis not saved", str(exc))
            return
        self.reload()
        self.notify(f"Hypothesis {plain(new.id[:8])} updated.", markup=False)

    def ask_hypothesis_status(self, h: m.Hypothesis) -> None:
        fields = [
            Field(
                "status",
                "Status",
                h.status.value,
                choices=[(s.value, s.value) for s in m.HypothesisStatus],
            ),
            Field("why", "Why (the observation)", placeholder="what you saw"),
            Field("reopen_when", "Reopen when (needed to reject)", h.reopen_when),
        ]

        def submit(vals: dict[str, Any]) -> str:
            self.api.set_hypothesis_status(
                h,
                m.HypothesisStatus(vals["status"]),
                vals["why"],
                reopen_when=vals["reopen_when"] or None,
            )
            return vals["status"]

        self.app.push_screen(
            FormModal(f"Status of {h.title}", fields, submit),
            lambda r: self._after(r, "status updated"),
        )

    def ask_variant_patch(self) -> None:
        """A patch file picked from the repository's tree, then the add-variant form."""
        view = self.view
        if view is None or not self._guard():
            return

        def picked(path: str | None) -> None:
            if path:
                self.ask_variant(patch=path)

        self.app.push_screen(FilePicker(view.session.repo), picked)

    def ask_variant(self, patch: str = "") -> None:
        view = self.view
        if view is None or not self._guard():
            return
        hyps = [
            (shown(h.title, 40, brief=True), h.id)
            for h in view.hypotheses
            if h.status is not m.HypothesisStatus.REJECTED
        ]
        first = hypotheses.hypothesis_for_new_variant(view.hypotheses, view.variants)
        base = view.baseline.snapshot.commit if view.baseline is not None else None
        refs = list_refs(view.session.repo, base)  # branches and tags, as the repo has them
        fields = [
            Field(
                "ref_pick",
                "Branch or tag (arrows, or type to find; vs the baseline snapshot)",
                choices=[(shown(r.label(), 70, brief=True), r.name) for r in refs],
                allow_blank=True,
            ),
            Field("ref", "…or any other git ref or commit", placeholder="e.g. a1b2c3d"),
            Field(
                "patch",
                "…or a patch on the baseline snapshot (a file)",
                patch,
                placeholder="palette: Add a variant from a patch file",
            ),
            Field("name", "Name (no spaces; blank: the ref's name)"),
            Field(
                "hypothesis_id",
                "Hypothesis it tests",
                first.id if first is not None else "",
                choices=hyps,
                allow_blank=True,
            ),
        ]

        def submit(vals: dict[str, Any]) -> Result[m.Variant]:
            patch_file = vals["patch"].strip()
            ref = vals["ref"].strip() or vals["ref_pick"]
            if not ref and not patch_file:
                raise ValueError("choose a branch or tag, or give a git ref or a patch file")
            if ref and patch_file:
                raise ValueError("a variant comes from a ref or from a patch, not both")
            name = vals["name"].strip() or (
                ref.rsplit("/", 1)[-1] if ref else Path(patch_file).stem
            )
            how: dict[str, Any] = {"patch": patch_file} if patch_file else {"ref": ref}
            # the race-safe path: a variant not recorded leaves no snapshot ref behind
            return self.api.add_variant(
                view.session,
                name,
                hypothesis_id=vals["hypothesis_id"] or None,
                probe=bool(vals.get("probe")),
                **how,
            )

        linked = {"id": first.id if first is not None else ""}
        by_name = {r.name: r for r in refs}

        def follow_ref(form: FormModal, name: str, value: str) -> None:
            """A picked branch suggests the hypothesis it tests, until the person picks one."""
            ref = by_name.get(value) if name == "ref_pick" else None
            field = form.field("hypothesis_id")
            if ref is None or field.value != linked["id"]:
                return
            h = hypotheses.hypothesis_for_ref(
                view.hypotheses, view.variants, f"{ref.name} {ref.subject}"
            )
            if h is not None and any(h.id == hid for _, hid in hyps):
                field.value = linked["id"] = h.id

        note = "" if hyps else "No hypothesis yet: a variant without one cannot be kept.\n"
        # the refs named on screen, not only behind the list's arrow
        shown_refs = [r for r in refs if r.kind == "branch" and r.stat != SAME_TREE] or refs
        if shown_refs:
            note += "In this repository: " + "; ".join(
                plain(r.label(), 90) for r in shown_refs[:REFS_NAMED]
            )
            if len(shown_refs) > REFS_NAMED:
                note += f"; and {len(shown_refs) - REFS_NAMED} more in the list"
        else:
            note += "No branch or tag found: give a commit below."
        self.app.push_screen(
            FormModal(
                "Add a variant",
                fields,
                submit,
                checkboxes=[("probe", "probe (observes, changes nothing)", False)],
                note=note,
                on_choice=follow_ref,
            ),
            self._variant_added,
        )

    def ask_residual(self) -> None:
        view = self.view
        if view is None or not self._guard():
            return
        pending = [v for v in view.variants if view.residual_of(v.id) is None] or view.variants
        first = pending[0]
        found = residual_suggestion(self.ledger, view, first)
        sug = found[0] if found else None
        fields = [
            Field(
                "variant",
                "Variant",
                first.id,
                choices=[(shown(v.name, 40, brief=True), v.id) for v in view.variants],
            ),
            Field(
                "residual",
                "How the outcome differs from the prediction",
                sug.value if sug else "",
                choices=[(residual_choice(c), c.value) for c in m.ResidualClass],
            ),
            Field("note", "Note", placeholder="what you read in the results"),
        ]

        def submit(vals: dict[str, Any]) -> m.Residual:
            if not vals["residual"]:
                raise ValueError("choose a residual class")
            v = next(x for x in view.variants if x.id == vals["variant"])
            return self.api.confirm_residual(
                view, v, m.ResidualClass(vals["residual"]), vals["note"]
            ).value

        self.app.push_screen(
            FormModal("Confirm the residual", fields, submit),
            lambda r: self._after(r, "residual confirmed"),
        )

    def gates_for(self, v: m.Variant) -> dict[m.DispositionChoice, list[str]]:
        if v.id not in self._gates and self.view is not None:
            self._gates[v.id] = disposition_gates(self.ledger, self.view, v)
        return self._gates.get(v.id, {})

    def ask_disposition(self, v: m.Variant) -> None:
        view = self.view
        if view is None or not self._guard():
            return
        checks = view.correctness_of(v.id)
        sug_class = next((c.suggested_class.value for c in checks if c.suggested_class), "")
        open_choices = [c for c, p in self.gates_for(v).items() if not p]
        default = (open_choices[0] if open_choices else m.DispositionChoice.NEED_EVIDENCE).value
        fields = [
            Field(
                "choice",
                "Decision",
                default,
                choices=[(CHOICE_WORDS[c], c.value) for c in m.DispositionChoice],
            ),
            Field(
                "optimization_class",
                "Numerical class",
                sug_class,
                choices=[(c.value, c.value) for c in m.OptimizationClass],
                allow_blank=True,
            ),
            Field("guards", "Guards or flags (comma separated)"),
            Field("fallback", "Fallback"),
            Field("failure_cases", "Known failure cases (comma separated)"),
            Field("remaining_bottlenecks", "Remaining bottlenecks (comma separated)"),
            Field("reason", "Why"),
            Field("reopen_when", "Reopen when"),
        ]

        def split(s: str) -> list[str]:
            return [x.strip() for x in s.split(",") if x.strip()]

        def submit(vals: dict[str, Any]) -> m.Disposition:
            kw: dict[str, Any] = {
                "optimization_class": m.OptimizationClass(vals["optimization_class"])
                if vals["optimization_class"]
                else None,
                "accepted_semantics": bool(vals.get("accepted_semantics")),
                "guards": split(vals["guards"]),
                "fallback": vals["fallback"],
                "failure_cases": split(vals["failure_cases"]),
                "remaining_bottlenecks": split(vals["remaining_bottlenecks"]),
                "reason": vals["reason"],
                "reopen_when": vals["reopen_when"],
            }
            try:
                return self.api.decide(
                    view.session, v, m.DispositionChoice(vals["choice"]), **kw
                ).value
            except GateRefusal as exc:  # the gate's words, naming this form's fields
                raise GateRefusal([in_form(r, FORM_LABELS) for r in exc.reasons]) from None

        gates = self.gates_for(v)
        note = "\n".join(
            f"{'✓' if not p else '✗'} {CHOICE_WORDS[c]}: "
            + ("open" if not p else "; ".join(in_form(r, FORM_LABELS) for r in p))
            for c, p in gates.items()
        )
        self.app.push_screen(
            FormModal(
                f"Decide {v.name}",
                fields,
                submit,
                checkboxes=[
                    (
                        "accepted_semantics",
                        "I accept the changed precision or semantics (C3/C4)",
                        False,
                    )
                ],
                note=note[:400],
            ),
            lambda r: self._after(r, f"decision recorded for {v.name}"),
        )

    def _variant_added(self, result: Result[m.Variant] | None) -> None:
        """The variant's warnings (the CLI's own, from the session layer), then the note."""
        if result is None:
            return
        self._after(result, f"variant {result.value.name} added")
        for w in result.warnings:
            self.notify(
                plain(w.words(), 1000),
                title=w.severity,
                severity="warning" if w.severity == "warning" else "information",
                markup=False,
                timeout=12,
            )

    def _after(self, result: Any, note: str) -> None:
        if result is None:
            return
        self.reload()
        self.notify(plain(note, 1000), markup=False)

    # ------------------------------------------------------------------ record

    def record_markdown(self) -> str:
        if self.view is None:
            return ""
        if self._record_md is None:
            try:
                self._record_md = self.api.record(self.view.session)
            except Exception as exc:
                self._record_md = f"The record could not be built: {exc}"
        return self._record_md

    def export_record(self) -> None:
        """Write the record in a thread (it gathers the whole session): the Record pane
        stays busy until the thread's message names the file, or the error."""
        if self.view is None:
            return
        self._export_worker(self.view.session, export_dir(self.app))

    @work(thread=True, exit_on_error=False, group="export", name="export")
    def _export_worker(self, session: m.Session, folder: Path) -> None:
        """In a worker thread, on a read-only ledger connection of its own."""
        try:
            with Ledger.open(self.app.ledger_path, readonly=True) as ledger:  # type: ignore[attr-defined]
                path = Session(ledger, session.id).export(session, folder).value
        except Exception as exc:  # said in the pane and over the app; the app lives on
            self.post_message(ExportDone("", str(exc) or type(exc).__name__))
            return
        self.post_message(ExportDone(str(path)))

    def on_export_done(self, msg: ExportDone) -> None:
        pane = self.query_one(RecordPane)
        pane.export_finished(msg.path, msg.error)
        if msg.error:
            self.show_error("Export failed", msg.error)
            return
        self.app.exported = msg.path  # type: ignore[attr-defined]
        self.notify(
            f"Record written to {plain(msg.path, None)} (and .json)", timeout=8, markup=False
        )

    # ------------------------------------------------------------------ work

    def start_baseline(self, runs: int, warmup: int, **how: Any) -> None:
        """`how`: max_runs, threshold, budget_s as `gpuopt baseline` takes them."""
        if not self._guard() or self.view is None:
            return
        if self.busy:
            self.notify(f"A {self.busy} is already running.", severity="warning")
            return
        self._begin("baseline")
        self._baseline_worker(self.view.session.id, runs, warmup, how)

    def start_round(
        self,
        min_blocks: int,
        max_blocks: int,
        threshold: float | None = None,
        budget_s: float | None = None,
    ) -> None:
        if not self._guard() or self.view is None:
            return
        if self.busy:
            self.notify(f"A {self.busy} is already running.", severity="warning")
            return
        self._begin("round")
        self._round_worker(self.view.session.id, min_blocks, max_blocks, threshold, budget_s)

    def _begin(self, kind: str) -> None:
        self.busy = kind
        self.stop_event = threading.Event()
        self.app.set_busy(True)  # type: ignore[attr-defined]
        self.update_title()
        self.pane().show(self.view)

    def stop_work(self) -> None:
        if self.busy:
            self.stop_event.set()
            self.notify("Stopping after the current run…")

    def _progress(self, kind: str) -> Any:
        def post(p: Any) -> None:
            self.post_message(EngineProgress(kind, p))

        return post

    def _engine_job(
        self,
        kind: str,
        session_id: str,
        call: Any,
        done_text: Any,
    ) -> None:
        """In a worker thread: run one engine call on a ledger connection of its own and
        report its end (or its error in words) as a message; widgets are never touched."""
        with Ledger.open(self.app.ledger_path) as ledger:  # type: ignore[attr-defined]
            session = Session(ledger, session_id).stored()
            monitor = self.app.make_monitor(ledger, session_id)  # type: ignore[attr-defined]
            try:
                result = call(ledger, session, self._progress(kind), monitor).value
            except ENGINE_ERRORS as exc:
                self.post_message(
                    EngineDone(kind, "", error=str(getattr(exc, "reason", "") or exc))
                )
                return
        self.post_message(EngineDone(kind, done_text(result)))

    @work(thread=True, exit_on_error=False, group="engine", name="baseline")
    def _baseline_worker(
        self, session_id: str, runs: int, warmup: int, how: dict[str, Any] | None = None
    ) -> None:
        self._engine_job(
            "baseline",
            session_id,
            lambda ledger, session, progress, monitor: Session(ledger, session_id).record_baseline(
                session,
                runs=runs,
                warmup=warmup,
                **(how or {}),
                on_telemetry=getattr(self.app, "job_telemetry", None),
                progress=progress,
                stop=self.stop_event,
                monitor=monitor,
            ),
            lambda b: f"Baseline {b.id[:8]} recorded: {b.reproducibility.value.replace('_', ' ')}.",
        )

    @work(thread=True, exit_on_error=False, group="engine", name="round")
    def _round_worker(
        self,
        session_id: str,
        min_blocks: int,
        max_blocks: int,
        threshold: float | None = None,
        budget_s: float | None = None,
    ) -> None:
        self._engine_job(
            "round",
            session_id,
            lambda ledger, session, progress, monitor: Session(ledger, session_id).run_round(
                session,
                min_blocks=min_blocks,
                max_blocks=max_blocks,
                threshold=threshold,
                budget_s=budget_s,
                progress=progress,
                stop=self.stop_event,
                monitor=monitor,
                seed=getattr(self.app, "seed", None),
                on_telemetry=getattr(self.app, "job_telemetry", None),
            ),
            lambda r: f"Round {r.number} {r.status.value} after {r.blocks} blocks.",
        )

    def on_engine_progress(self, msg: EngineProgress) -> None:
        rnd = self.query_one(RoundPane)
        panes: list[StepPane] = [rnd]
        if msg.kind == "baseline":  # and the round pane's too while its g records it
            panes = [self.query_one(BaselinePane)]
            if rnd.rebaselining:
                panes.append(rnd)
        for pane in panes:
            if pane.built_body:  # a pane not shown yet has no bar to move
                pane.progress(msg.progress)  # type: ignore[attr-defined]

    def _end(self) -> None:
        self.busy = None
        self.app.set_busy(False)  # type: ignore[attr-defined]
        if self.quit_when_done:  # the job stopped cleanly: now quit, as was asked
            self.app.exit()

    def on_engine_done(self, msg: EngineDone) -> None:
        self._end()
        self.reload()
        if msg.error:
            self.show_error(f"The {msg.kind} did not complete", msg.error)
            return
        self.notify(plain(msg.message, 1000), timeout=6, markup=False)
        if msg.kind == "round":
            self.goto(m.StepName.RESULTS, focus=True)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "engine" or event.state is not WorkerState.ERROR:
            return
        self._end()
        self.reload()
        err = event.worker.error
        detail = "".join(traceback.format_exception(err)) if err is not None else ""
        self.show_error(f"The {event.worker.name} failed", f"{type(err).__name__}: {err}", detail)

    def show_error(self, title: str, message: str, detail: str = "") -> None:
        self.app.push_screen(ErrorModal(title, message, detail))

    # ------------------------------------------------------------------ telemetry

    def telemetry_sample(self, sample: m.TelemetrySample) -> None:
        self.query_one(TelemetryPanel).push(sample)


def residual_choice(c: m.ResidualClass) -> str:
    """A residual class and its words, shortened at a word (never mid-word) to fit a form."""
    return textwrap.shorten(f"{c.value}: {RESIDUAL_WORDS[c]}", 70, placeholder="…")


def key_of(app: Any, b: Binding) -> str:
    """A binding's first key as shown (after the person's keymap, if it remaps this id)."""
    return shown_key(app, b)


def _form_value(value: Any) -> Any:
    """A model's field as a form field holds it (enums by value, None as empty)."""
    if value is None:
        return ""
    return value.value if hasattr(value, "value") else value


def _field_text(value: Any) -> str:
    """A stored field's value in one line, for a conflict notice."""
    if hasattr(value, "model_dump_json"):
        return str(value.model_dump_json())
    return str(getattr(value, "value", value))
