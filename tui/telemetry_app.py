"""`gpuopt telemetry` in a terminal: a live app of every GPU and the host, with the compute
processes on each GPU (a foreign process is a reason to distrust a benchmark).

The sampler thread of the telemetry monitor owns every NVML call and fills a `View`
(tui.commands.telemetry, also the plain printout's); the app redraws from it on a timer.
Keys: space pauses the picture, + and - change the rate, g picks the next GPU (0-9 a GPU
by index), q quits. A replayed scenario says REPLAY in a column of its own, and is walked
through a few runs so their trust verdicts show.
"""

from __future__ import annotations

import time
from typing import Any

import psutil
from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static

from session.api import make_monitor
from tui.telemetry_view import View
from tui.widgets.footer import SteadyFooter

RATES = (0.25, 0.5, 1.0, 2.0, 5.0)  # seconds between samples and pictures
PROCESS_EVERY_S = 2.0  # the compute-process list is a slower NVML call: read less often


class TelemetryApp(App[None]):
    TITLE = "gpuopt telemetry"
    CSS = """
    #tm-head { height: 1; background: $panel; }
    #tm-gpus { height: auto; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    #tm-procs { height: auto; max-height: 12; margin: 1 0 0 0; }
    #tm-note { height: auto; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("space", "pause", "pause", id="telemetry.pause"),
        Binding("plus", "rate(-1)", "faster", id="telemetry.faster"),
        Binding("minus", "rate(1)", "slower", id="telemetry.slower"),
        Binding("g", "next_gpu", "next GPU", id="telemetry.next_gpu"),
        *[
            Binding(str(i), f"pick_gpu({i})", f"GPU {i}", show=False, id=f"telemetry.gpu_{i}")
            for i in range(10)
        ],
        Binding("q", "quit", "quit", id="telemetry.quit"),
    ]

    def __init__(
        self,
        *,
        scenario: str | None = None,
        interval: float = 1.0,
        seconds: float = 0.0,
        sample: bool = True,
    ) -> None:
        super().__init__()
        self.scenario = scenario
        self.view = View(replay=None)
        self.rate = min(range(len(RATES)), key=lambda i: abs(RATES[i] - interval))
        self.seconds = seconds
        self.sample = sample  # False: no sampler (a test feeds `view` itself)
        self.paused = False
        self.gpu = 0  # the GPU whose processes are listed
        self.processes: dict[int, list[dict[str, Any]]] = {}
        self.monitor: Any = None
        self._timer: Any = None

    def compose(self) -> ComposeResult:
        yield Static("", id="tm-head")
        yield Static("", id="tm-gpus")
        yield DataTable(id="tm-procs", cursor_type="row", zebra_stripes=True)
        yield Static("", id="tm-note")
        yield SteadyFooter(compact=True)

    def on_mount(self) -> None:
        t = self.query_one("#tm-procs", DataTable)
        t.add_columns("GPU", "pid", "user", "GPU memory", "command")
        if self.sample:
            self._start()
        self._timer = self.set_interval(RATES[self.rate], self.redraw)
        if self.seconds:
            self.set_timer(self.seconds, self.exit)
        self.redraw()

    def on_unmount(self) -> None:
        if self.monitor is not None:
            self.monitor.close()

    # ------------------------------------------------------------------ sampling

    @work(thread=True, exit_on_error=False, group="telemetry", name="telemetry-sampler")
    def _start(self) -> None:
        """NVML's start can wait: off the UI thread. Then, in this thread, the slower
        reads: the compute processes every few seconds, and a replay's runs."""
        monitor = make_monitor(None, None, scenario=self.scenario, on_sample=self.view.on_sample)
        self.monitor = monitor
        self.view.status = monitor.status
        self.view.devices = {d.index: d for d in monitor.devices}
        if self.scenario is not None:
            self.view.replay = getattr(monitor.sampler.gpu, "title", self.scenario)
        self._set_rate()
        run_n, in_run, switch = 0, False, time.monotonic() + 1.0
        next_procs = 0.0
        while self.is_running and monitor is self.monitor:
            now = time.monotonic()
            if now >= next_procs:
                self.processes = read_processes(monitor)
                next_procs = now + PROCESS_EVERY_S
            if self.view.replay is not None and now >= switch:  # walk the scenario's runs
                if not self.is_running:
                    break
                if in_run:
                    obs = monitor.run_finished(f"replay-{run_n}")
                    why = "".join(f"\n  · {r}" for r in obs.reasons) or " (no problem seen)"
                    self.view.verdicts.append(f"replay run {run_n}: {obs.trust}{why}")
                    switch = now + 1.0
                else:
                    run_n += 1
                    monitor.run_started(f"replay-{run_n}", None)
                    switch = now + 2.5
                in_run = not in_run
            time.sleep(0.1)

    def _set_rate(self) -> None:
        sampler = getattr(self.monitor, "sampler", None)
        if sampler is not None:  # idle sampling at the rate the picture is drawn
            sampler.idle_period = RATES[self.rate]

    # ------------------------------------------------------------------ drawing

    def redraw(self) -> None:
        if self.paused:
            return
        v = self.view
        head = Text(" gpuopt telemetry", style="bold")
        head.append(f" · every {RATES[self.rate]:g} s")
        if v.replay is not None:
            head.append(" · REPLAY", style="bold magenta")
            head.append(f" {v.replay}", style="magenta")
        if self.paused:
            head.append(" · paused", style="bold yellow")
        self.query_one("#tm-head", Static).update(head)
        lines = v.lines()
        body = Text("\n").join(lines)
        body.no_wrap, body.overflow = True, "ellipsis"  # a wrapped line would lose its label
        self.query_one("#tm-gpus", Static).update(body)
        self._draw_processes()

    def _draw_processes(self) -> None:
        t = self.query_one("#tm-procs", DataTable)
        t.clear()
        rows = [(g, p) for g, procs in sorted(self.processes.items()) for p in procs]
        mine = [(g, p) for g, p in rows if g == self.gpu] or rows
        for g, p in mine:
            t.add_row(str(g), str(p["pid"]), p["user"], p["memory"], Text(p["command"]))
        gpus = sorted(self.view.devices) or [0]
        note = Text()
        note.append(f"processes on GPU {self.gpu}" if len(gpus) > 1 else "compute processes")
        if not rows:
            note.append(": none seen (NVML lists compute contexts only)", style="dim")
        self.query_one("#tm-note", Static).update(note)

    # ------------------------------------------------------------------ keys

    def action_pause(self) -> None:
        self.paused = not self.paused
        if not self.paused:
            self.redraw()
        else:
            head = self.query_one("#tm-head", Static)
            head.update(Text(" gpuopt telemetry · paused (space goes on)", style="bold yellow"))

    def action_rate(self, step: int) -> None:
        self.rate = max(0, min(len(RATES) - 1, self.rate + step))
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_interval(RATES[self.rate], self.redraw)
        self._set_rate()
        self.redraw()

    def action_next_gpu(self) -> None:
        gpus = sorted(self.view.devices) or [0]
        i = gpus.index(self.gpu) if self.gpu in gpus else -1
        self.gpu = gpus[(i + 1) % len(gpus)]
        self.redraw()

    def action_pick_gpu(self, index: int) -> None:
        if index in self.view.devices:
            self.gpu = index
            self.redraw()
        else:
            self.notify(f"There is no GPU {index}.", severity="warning")


def read_processes(monitor: Any) -> dict[int, list[dict[str, Any]]]:
    """The compute processes on each GPU, read in the sampler's own thread, with the
    user and command line from the host (a process gone meanwhile is left out)."""
    sampler = getattr(monitor, "sampler", None)
    gpu = getattr(sampler, "gpu", None)
    if sampler is None or gpu is None or not sampler.gpu_ok:
        return {}
    try:
        # NVML is called from its owner thread only (measure.telemetry.sampler)
        pids = sampler._in_owner(gpu.processes, (), 5.0)
    except Exception:  # a lost GPU, a closed sampler: no list this time
        return {}
    out: dict[int, list[dict[str, Any]]] = {}
    for index, found in pids.items():
        rows = []
        for pid in found:
            row = {"pid": pid, "user": "—", "memory": "—", "command": "(not on this host)"}
            try:
                proc = psutil.Process(pid)
                row["user"] = proc.username()
                row["command"] = " ".join(proc.cmdline()) or proc.name()
            except (psutil.Error, OSError):
                pass
            rows.append(row)
        out[index] = rows
    return out
