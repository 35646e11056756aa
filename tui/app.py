"""The gpuopt Textual app: a session picker, the session screen, and review mode.

Textual draws on stderr and reads the keyboard itself: nothing here redirects either.
torch is never imported in this process; long work runs in thread workers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, ScreenStackError, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen

from session import models as m
from session.api import Ledger, NullMonitor, make_monitor, record_samples
from tui.keymap import KeymapError, load_keymap
from tui.screens.modals import QuitModal
from tui.screens.picker import PickerScreen
from tui.screens.review import ReviewScreen
from tui.screens.session import SessionScreen


class TelemetryTick(Message):
    def __init__(self, sample: m.TelemetrySample) -> None:
        super().__init__()
        self.sample = sample


class JobTelemetry(Message):
    """A Slurm job's samples from its node, and its state (session.cluster.job_telemetry)."""

    def __init__(self, samples: list[m.TelemetrySample], where: str) -> None:
        super().__init__()
        self.samples = samples
        self.where = where


class FeedReady(Message):
    def __init__(self, note: str, name: str) -> None:
        super().__init__()
        self.note = note
        self.name = name


class GpuoptApp(App[None]):
    TITLE = "gpuopt"
    CSS_PATH = "gpuopt.tcss"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [Binding("ctrl+q", "quit", "quit", priority=True, id="app.quit")]

    def __init__(
        self,
        ledger_path: str | Path | None = None,
        *,
        session_id: str | None = None,
        review: bool = False,
        readonly: bool = False,
        telemetry: str = "live",
        replay: Sequence[m.TelemetrySample] | None = None,
        draft: dict[str, str] | None = None,
        export_dir: str | Path | None = None,
        seed: int | None = None,
        start_step: m.StepName | None = None,
        resumed: bool = False,
    ) -> None:
        super().__init__()
        self.ledger_path = ledger_path
        self.session_id = session_id
        self.review = review
        self.readonly = readonly or review
        self.telemetry_mode = telemetry
        self.replay = list(replay or [])
        self.draft = draft
        self.export_dir = export_dir
        self.seed = seed
        self.start_step = start_step
        self.resumed = resumed  # `gpuopt demo` found its session again: say so, and how to restart
        self.exported: str | None = None
        self.telemetry_history: deque[m.TelemetrySample] = deque(maxlen=64)
        self.telemetry_note = ""
        self.telemetry_where = ""  # a Slurm job's line: while set, the panel shows its node
        self.gpu_name = ""
        self._busy = False
        self.telemetry_panels: set[Any] = set()
        self.monitor: Any = None
        self._sink_ledger: Ledger | None = None
        self.ledger: Any = None

    # ------------------------------------------------------------------ start

    def on_mount(self) -> None:
        try:
            self.set_keymap(load_keymap())
        except KeymapError as exc:  # the person's file: say what is wrong, keep the defaults
            self.notify(str(exc), title="Keymap not applied", severity="error", markup=False)
        self.ledger = Ledger.open(self.ledger_path, readonly=self.readonly)
        if self.ledger_path is None:
            self.ledger_path = self.ledger.path
        if self.telemetry_mode == "replay":
            self.telemetry_note = "replayed telemetry"
            self.gpu_name = (
                "NVIDIA H200" if any(s.util_gpu is not None for s in self.replay) else ""
            )
            self.telemetry_history.extend(self.replay)
        elif self.telemetry_mode == "live":
            # After the first frame: the sampler's start (psutil, NVML's init) can wait.
            self.call_after_refresh(self._start_telemetry)
        else:
            self.telemetry_note = "telemetry is off"
        self.push_screen(self.first_screen())
        if self.resumed:
            self.notify(
                "Resumed the demo session made before. `gpuopt demo --fresh` starts a new one.",
                timeout=10,
                markup=False,
            )

    def first_screen(self) -> Screen[Any]:
        if self.review:
            return ReviewScreen()
        if self.session_id is not None or self.draft:
            screen = SessionScreen(
                self.session_id, readonly=self.readonly, draft=self.draft, list_screen=PickerScreen
            )
            return screen
        return PickerScreen()

    def on_unmount(self) -> None:
        if self.monitor is not None:
            self.monitor.close()
        if self._sink_ledger is not None:
            self._sink_ledger.close()
        if self.ledger is not None:
            self.ledger.close()

    # ------------------------------------------------------------------ telemetry

    def _start_telemetry(self) -> None:
        """One sampler for the whole process: the telemetry monitor (it also judges each run
        for the engine)."""
        self.monitor = make_monitor(self._sink, None, on_sample=self._on_samples)
        self._probe_monitor()

    def _sink(self, rows: list[Any]) -> None:
        """Samples go to the ledger only while a baseline or round runs (sampler thread)."""
        if not self._busy or self.readonly or not rows or self.telemetry_where:
            return  # (a Slurm job's samples are its node's, imported from its journal)
        if self._sink_ledger is None:
            self._sink_ledger = Ledger.open(self.ledger_path)
        record_samples(self._sink_ledger, rows)

    def _on_samples(self, samples: list[Any]) -> None:
        """From the sampler thread: one message per GPU 0 or host sample."""
        merged: dict[str, Any] = {}
        for s in samples:
            if s.gpu not in (None, 0):
                continue
            for k, v in s.as_dict().items():
                if v is not None and k in m.TelemetrySample.model_fields:
                    merged.setdefault(k, v)
        if "t_us" in merged:
            merged["source"] = (
                merged.get("source")
                if merged.get("source") in ("nvml", "host", "replay")
                else "host"
            )
            self.post_message(TelemetryTick(m.TelemetrySample(**merged)))

    @work(thread=True, exit_on_error=False, group="telemetry", name="telemetry-probe")
    def _probe_monitor(self) -> None:
        status = self.monitor.status
        devices = self.monitor.devices
        name = getattr(devices[0], "name", "") if devices else ""
        self.post_message(FeedReady("" if status == "ok" else status, name))

    def on_feed_ready(self, msg: FeedReady) -> None:
        self.telemetry_note, self.gpu_name = msg.note, msg.name
        for panel in self._panels():
            panel.set_note(msg.note)
            panel.gpu_name = msg.name

    def on_telemetry_tick(self, msg: TelemetryTick) -> None:
        if self.telemetry_where:  # a job measures on its node: this box's GPU is not it
            return
        self.telemetry_history.append(msg.sample)
        for panel in self._panels():
            panel.push(msg.sample)

    def job_telemetry(self, samples: list[m.TelemetrySample], where: str) -> None:
        """From the thread that follows a Slurm job: its node's samples and state."""
        self.post_message(JobTelemetry(samples, where))

    def on_job_telemetry(self, msg: JobTelemetry) -> None:
        if not self._busy:  # the job's work is over: this box's sampler again
            return
        if not self.telemetry_where:  # the first line of a job: its samples only, from now
            self.telemetry_history.clear()
            for panel in self._panels():
                panel.samples.clear()
        self.telemetry_where = msg.where
        self.telemetry_history.extend(msg.samples)
        for panel in self._panels():
            panel.where = msg.where
            panel.push_many(msg.samples)

    def _panels(self) -> Iterable[Any]:
        """The panels on the screen in front (registered by the panels themselves: a DOM
        query at 4 Hz would cost more than the drawing)."""
        try:
            front = self.screen
        except ScreenStackError:  # a sample that arrives while the app closes
            return []
        return [p for p in self.telemetry_panels if p.is_attached and p.screen is front]

    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        if not busy and self.telemetry_where:
            self.telemetry_where = ""
            for panel in self._panels():
                panel.where = ""
        if not busy and self.monitor is not None:
            self.monitor.flush()

    def make_monitor(self, ledger: Any, session_id: str) -> Any:
        """The run monitor the engine uses: the app's sampler, or none with telemetry off
        or replayed."""
        if self.monitor is not None:
            self.monitor.sampler.session_id = session_id
            return self.monitor
        return NullMonitor()

    # ------------------------------------------------------------------ palette

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        # The screen's own commands (every action of every step) come from its provider
        # (tui.widgets.palette); here only what the whole app offers.
        yield from super().get_system_commands(screen)
        yield SystemCommand(
            "Review this ledger", "sessions, rounds, rejected ideas", self._open_review
        )

    # ------------------------------------------------------------------ quitting

    async def action_quit(self) -> None:
        """ctrl+q: quit at once when idle; while a baseline or round runs, ask first and
        stop it the clean way (`s`: after the current run) before quitting."""
        running = [s for s in self.screen_stack if isinstance(s, SessionScreen) and s.busy]
        if not running:
            front = self.screen
            if isinstance(front, SessionScreen):  # typed text is asked about, never lost
                front.leave(self.exit)
            else:
                self.exit()
            return
        job = running[-1]
        if job.quit_when_done:
            self.notify("Quitting after the current run…")
            return
        if isinstance(self.screen, QuitModal):
            return

        def answered(stop: bool | None) -> None:
            if stop and job.busy:
                job.quit_when_done = True
                job.stop_work()
            elif stop:  # it ended while the question was open
                self.exit()

        self.push_screen(QuitModal(job.busy or "job"), answered)

    def _open_review(self) -> None:
        self.push_screen(ReviewScreen())
