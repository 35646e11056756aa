"""The session screen's long work: baseline, round and export run in thread workers
that open their own ledger connection, never touch a widget, and report through messages
(progress, the end, the error), which are handed to the panes here.
"""

from __future__ import annotations

import threading
import traceback
from pathlib import Path
from typing import Any

from textual import work
from textual.message import Message
from textual.worker import Worker, WorkerState

from session import models as m
from session.api import (
    ENGINE_ERRORS,
    Ledger,
    Session,
    export_written_words,
)
from tui.display import plain
from tui.screens.session_base import SessionScreenBase
from tui.screens.session_manage import export_dir
from tui.screens.step_base import StepPane
from tui.screens.steps.baseline import BaselinePane
from tui.screens.steps.record import RecordPane
from tui.screens.steps.round import RoundPane


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


class EngineWork(SessionScreenBase):
    """Start, stop and follow the engine's jobs and the record's export."""

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
            plain(export_written_words(msg.path), None, multiline=True), timeout=8, markup=False
        )

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
