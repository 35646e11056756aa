"""The baseline step: record the pinned snapshot's reference results and its A/A check."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import ProgressBar, Static

from session import models as m
from session.api import (
    DEFAULT_MAX_RUNS,
    DEFAULT_RUNS,
    NO_SESSION,
    BaselineKeys,
    Outcome,
    StepKeys,
    baseline_drifting_next,
    baseline_missing_next,
    baseline_ok_next,
    baseline_problem,
    baseline_repair_next,
    baseline_warning,
    baseline_words,
    busy_next,
    eta_text,
    judge_baseline,
    metric_label,
    noisy_baseline_next,
    repair_words,
    said_once,
    stored_outcome,
    supported_band,
)
from session.read_model import SessionView
from tui.display import LONG_LIMIT, plain, shown
from tui.screens.pane_messages import StartBaseline, StopWork
from tui.screens.step_base import StepPane
from tui.screens.steps.round import RoundPane
from tui.widgets.form import Field

ADVISED = "round.advised_threshold"  # the Round step's key that fills the advised band


class BaselinePane(StepPane):
    step = m.StepName.BASELINE
    GUIDANCE = (
        "Pin what every variant is compared against: an exact snapshot of the tree, the "
        "machine's fingerprint and the contract, measured in whole process runs. Its two "
        "halves must agree with each other before anything is compared to it."
    )
    BINDINGS = [
        Binding("r", "record", "record", tooltip="Record the baseline", id="baseline.record"),
        Binding(
            "s",
            "stop",
            "stop",
            tooltip="Stop the baseline after the current run",
            id="baseline.stop",
        ),
    ]

    def body(self) -> ComposeResult:
        yield Static("", id="baseline-info")
        with Vertical(id="baseline-settings", classes="row"):  # height: auto
            with Horizontal(classes="row"):
                # The minimum of `gpuopt baseline`: it keeps running until its halves decide.
                yield Field("runs", "Runs per workload", str(DEFAULT_RUNS))
                yield Field("warmup", "Warm-up runs", "1")
                yield Field("max_runs", "Max runs", placeholder=str(DEFAULT_MAX_RUNS))
            with Horizontal(classes="row"):  # `gpuopt baseline --threshold F --budget S`
                yield Field("threshold", "Threshold", placeholder="contract's")
                yield Field("budget", "Budget (s)", placeholder="no limit")
        with Vertical(id="baseline-progress", classes="progress-box"):
            yield Static("", id="baseline-status")
            yield ProgressBar(total=100, show_eta=False, id="baseline-bar")

    def next_hint(self, view: SessionView | None) -> str:
        if view is None:
            return NO_SESSION
        keys = self.step_keys(record="baseline.record", stop="baseline.stop")
        if self.context.busy == "baseline":
            return busy_next(keys)
        b = view.baseline
        if b is None:
            return baseline_missing_next(keys)
        o = stored_outcome(b)
        if o is None:
            return baseline_missing_next(keys, judged=False)
        if o.blocks_round:
            return baseline_repair_next(repair_words(o), keys)
        if o.warns:
            return self._go_on_hint(view, b, keys)
        return baseline_ok_next(keys)

    def _go_on_hint(self, view: SessionView, b: m.Baseline, step_keys: StepKeys) -> str:
        """A baseline too noisy for the contract's band: a round may go on at the band its
        runs support: the Round step's key fills it in (as `gpuopt round --threshold`)."""
        words = baseline_words(b, view.session.contract.threshold)
        if stored_outcome(b) is Outcome.DRIFTING:  # the session's words
            said = words
            if self.context.ledger is not None:
                said = baseline_warning(self.context.ledger, view.session, b) or words
            return baseline_drifting_next(said, step_keys)
        delta = view.session.contract.threshold if b.threshold is None else b.threshold
        wider = None
        if self.context.ledger is not None:
            judged = judge_baseline(self.context.ledger, view.session, b, delta)
            wider = supported_band(judged)
        keys = BaselineKeys(
            record=self.own_key("baseline.record"),
            next=self.next_step_key(),
            round_step=self.step_key(m.StepName.ROUND),
            band=self.key_in(RoundPane, ADVISED),
            run=self.key_in(RoundPane, "round.run"),
        )
        return noisy_baseline_next(words, delta, wider, keys)

    def refresh_body(self, view: SessionView | None) -> None:
        info = self.query_one("#baseline-info", Static)
        busy = self.context.busy == "baseline"
        self.query_one("#baseline-progress").display = busy
        self.query_one("#baseline-settings").display = (
            not self.readonly and not busy and view is not None
        )
        if view is None or view.baseline is None:
            info.update(Text("No baseline yet.", style="dim"))
            if view is not None and view.session.contract.workloads:
                pass
            return
        info.update(baseline_table(view))

    def progress(self, p: Any) -> None:
        bar = self.query_one("#baseline-bar", ProgressBar)
        total = max(int(getattr(p, "runs_total", 0) or 0), 1)
        done = int(getattr(p, "runs_done", 0) or 0)
        bar.update(total=total, progress=done)
        eta = getattr(p, "eta_s", None)  # the engine's, from its pace so far
        # One counter: the engine's own words ("softmax: run 5 of 24"; warm-up runs are
        # not counted there), the bar counts every process, warm-up included.
        self.query_one("#baseline-status", Static).update(
            Text.assemble(
                (plain(p.message or p.phase, 1000), "bold"),
                f" · ETA {eta_text(eta)} · s stops cleanly",
            )
        )

    def action_record(self) -> None:
        f = {x.field_name: x for x in self.query(Field)}
        for x in f.values():
            x.set_error("")
        try:
            runs = int(f["runs"].value)
            warmup = int(f["warmup"].value)
            if runs < 8:
                raise ValueError
        except ValueError:
            f["runs"].set_error(
                "a whole number, at least 8: fewer cannot show that its two halves agree"
            )
            return
        try:
            top = f["max_runs"].value.strip()
            max_runs = int(top) if top else None
        except ValueError:
            f["max_runs"].set_error("max runs is a whole number (blank: gpuopt baseline's)")
            return
        try:
            thr = float(f["threshold"].value) if f["threshold"].value.strip() else None
            budget = float(f["budget"].value) if f["budget"].value.strip() else None
        except ValueError:
            f["threshold"].set_error("threshold and budget are numbers (e.g. 0.05, 600)")
            return
        warmup = max(warmup, 0)
        why = baseline_problem(runs, warmup, max_runs, thr, budget)  # the session's rule
        if why:
            f["max_runs" if why.startswith("max runs") else "threshold"].set_error(why)
            return
        self.post_message(
            StartBaseline(runs, warmup, max_runs=max_runs, threshold=thr, budget_s=budget)
        )

    def action_stop(self) -> None:
        self.post_message(StopWork())


def baseline_table(view: SessionView) -> Table:
    b = view.baseline
    assert b is not None
    t = Table.grid(padding=(0, 1))
    t.add_column(style="dim", no_wrap=True)
    t.add_column(overflow="fold")
    t.add_row("Baseline ID", shown(b.id, style="bold"))
    snap = b.snapshot
    t.add_row(
        "snapshot",
        Text(f"{plain(snap.commit[:12])}{' +dirty' if snap.dirty else ''}  {plain(snap.ref)}"),
    )
    for w in snap.warnings:
        t.add_row("", shown(w, LONG_LIMIT, style="yellow"))
    o = stored_outcome(b)
    style = "yellow"  # not judged, or a warning: a round may go on
    if o is not None and o.blocks_round:
        style = "bold red"
    elif o is not None and not o.warns:
        style = "bold green"
    t.add_row(
        "A/A check",  # the label names the check; the value says how it came out
        _aa_line(baseline_words(b, view.session.contract.threshold), b, style),
    )
    contract = view.session.contract
    units = {w.name: metric_label(contract, w)[1] for w in contract.workloads}
    for name, value in b.reference.items():
        unit = plain(units.get(name, contract.metric.unit))
        t.add_row(Text(f"ref {plain(name, 40, brief=True)}"), Text(f"{value:.6g} {unit}"))
    t.add_row("runs", f"{b.runs_per_workload} per workload ({view.baseline_runs} recorded)")
    env = b.environment
    gpus = ", ".join(g.name for g in env.gpus) or (env.gpu_note or "no GPU")
    machine = f"{gpus}; {env.hostname or 'host'}; {env.cpu_model or ''} ×{env.cpu_count}"
    t.add_row("machine", shown(machine, LONG_LIMIT))
    software = (
        f"python {env.python or '?'}; torch {env.torch or '—'}; cuda {env.cuda_runtime or '—'}"
    )
    t.add_row("software", shown(software, LONG_LIMIT))
    if b.reset_procedure:
        t.add_row("reset", shown(b.reset_procedure, LONG_LIMIT, multiline=True))
    return t


def _aa_line(outcome: str, b: m.Baseline, style: str) -> Text:
    """The outcome in its colour, then the detail without the outcome said again."""
    rest = said_once(outcome, b.reproducibility_detail)[len(outcome) :].lstrip("; ")
    return Text.assemble((outcome, style), "  ", shown(rest, LONG_LIMIT))
