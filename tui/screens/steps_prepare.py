"""The first four steps: contract, baseline, preflight, hypotheses."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Input, Label, ProgressBar, Static, TextArea

from session import models as m
from tui.bridge import SessionView, similar_rejected
from tui.display import LONG_LIMIT, cell, plain, shown
from tui.screens.step_base import StepPane
from tui.widgets.form import Field, clear_errors, show_errors
from tui.widgets.ratio import fmt_eta

# ---------------------------------------------------------------------------- contract


class ContractPane(StepPane):
    step = m.StepName.CONTRACT
    GUIDANCE = (
        "Say what is measured and what counts as correct before anything is timed. "
        "One workload per line as NAME=COMMAND; the metric is wall time, regex:PATTERN "
        "with a group named value, or json:KEY."
    )
    BINDINGS = [Binding("ctrl+s,f2", "save", "save contract")]

    def body(self) -> ComposeResult:
        yield Static("", id="contract-summary")
        with Vertical(id="contract-form"):
            yield Field("title", "Title", placeholder="what this session is about")
            yield Field("repo", "Repository", placeholder="/path/to/git/repo")
            yield Label("Workloads (NAME=COMMAND, one per line)", classes="field-label")
            yield TextArea("", id="workloads-text", soft_wrap=True, show_line_numbers=False)
            yield Static("", classes="error", id="workloads-error")
            with Horizontal(classes="row"):
                yield Field("metric", "Metric", "wall", placeholder="wall | regex:… | json:KEY")
                yield Field("unit", "Unit", "s")
                yield Field(
                    "direction",
                    "Better is",
                    "lower",
                    choices=[("lower", "lower"), ("higher", "higher")],
                )
            yield Field("check", "Correctness check (exit 0 passes)", placeholder="python check.py")
            with Horizontal(classes="row"):
                yield Field("prepare", "Before every run (reset)", placeholder="optional")
                yield Field("threshold", "Noise threshold", "0.02")

    def fields(self) -> list[Field]:
        return list(self.query(Field))

    def built(self) -> None:
        if getattr(self.app, "steady", False):
            self.query_one("#workloads-text", TextArea).cursor_blink = False

    def action_open(self, action: str) -> bool | None:
        return not (action == "save" and self.view is not None and self.view.baseline is not None)

    def next_hint(self, view: SessionView | None) -> str:
        if view is None:
            return "fill in the contract and press ctrl+s (or F2) to start the session."
        if view.baseline is None:
            return "the contract can still change; press 3 or n to go on to the baseline."
        return "the contract is fixed by the baseline; go on with n."

    def refresh_body(self, view: SessionView | None) -> None:
        locked = view is not None and (view.baseline is not None or self.readonly)
        self.query_one("#contract-form").display = not locked
        summary = self.query_one("#contract-summary", Static)
        summary.display = view is not None
        if view is not None:
            summary.update(contract_table(view.session))
        if view is not None and not locked:
            self.fill(view.session)
        elif view is None:
            draft = self.session_screen.draft
            if draft:
                self.fill_draft(draft)

    def fill(self, s: m.Session) -> None:
        c = s.contract
        values = {
            "title": s.title,
            "repo": s.repo,
            "metric": "wall"
            if c.metric.source is m.MetricSource.WALL
            else f"{c.metric.source.value}:{c.metric.pattern}",
            "unit": c.metric.unit,
            "direction": c.metric.direction.value,
            "check": c.check or "",
            "prepare": c.hooks.prepare or "",
            "threshold": f"{c.threshold:g}",
        }
        self.fill_draft(values)
        self.set_workloads("\n".join(f"{w.name}={w.command}" for w in c.workloads))

    def set_workloads(self, text: str) -> None:
        """Controls in stored commands shown visibly; given back exactly when unedited."""
        self._workloads_stored = text
        self.query_one("#workloads-text", TextArea).text = plain(text, None, multiline=True)

    def workloads_text(self) -> str:
        text = self.query_one("#workloads-text", TextArea).text
        stored = getattr(self, "_workloads_stored", "")
        return stored if text == plain(stored, None, multiline=True) else text

    def fill_draft(self, values: dict[str, str]) -> None:
        for f in self.fields():
            if f.field_name in values:
                f.value = values[f.field_name]
        if "workloads" in values:
            self.set_workloads(values["workloads"])

    def focus_first(self) -> None:
        if self.view is None and self.query_one("#contract-form").display:
            self.query_one("#field-title Input", Input).focus()
        else:
            self.focus()

    def build(self) -> m.Session:
        vals = {f.field_name: f.value.strip() for f in self.fields()}
        lines = [ln.strip() for ln in self.workloads_text().splitlines() if ln.strip()]
        errors: dict[str, str] = {}
        workloads: list[m.Workload] = []
        for ln in lines:
            try:
                workloads.append(m.Workload.parse(ln))
            except (ValueError, ValidationError) as exc:
                errors["workloads"] = _msg(exc)
        if not lines:
            errors["workloads"] = "at least one workload is needed"
        try:
            metric = m.Metric.parse(
                vals["metric"] or "wall",
                unit=vals["unit"] or None,
                direction=vals["direction"] or None,
            )
        except (ValueError, ValidationError) as exc:
            errors["metric"] = _msg(exc)
            metric = m.Metric()
        try:
            threshold = float(vals["threshold"] or "0.02")
        except ValueError:
            errors["threshold"] = "a fraction such as 0.02 (2%)"
            threshold = 0.02
        if errors:
            raise _FieldErrors(errors)
        repo = vals["repo"]
        if repo:
            from pathlib import Path

            p = Path(repo).expanduser()
            if not p.is_dir():
                raise _FieldErrors({"repo": "no such directory"})
            repo = str(p.resolve())
        contract = m.Contract(
            metric=metric,
            workloads=workloads,
            check=vals["check"] or None,
            hooks=m.Hooks(prepare=vals["prepare"] or None),
            threshold=threshold,
        )
        current = self.view.session if self.view else None
        if current is not None:
            return m.Session.model_validate(
                {
                    **current.model_dump(),
                    "title": vals["title"],
                    "repo": repo,
                    "contract": contract.model_dump(),
                }
            )
        return m.Session(title=vals["title"], repo=repo, contract=contract)

    def action_save(self) -> None:
        if self.readonly or (self.view is not None and self.view.baseline is not None):
            self.notify("The contract is fixed once a baseline exists.", severity="warning")
            return
        fields = self.fields()
        clear_errors(fields)
        werr = self.query_one("#workloads-error", Static)
        werr.update("")
        try:
            session = self.build()
        except _FieldErrors as exc:
            for f in fields:
                if f.field_name in exc.errors:
                    f.set_error(exc.errors[f.field_name])
            werr.update(exc.errors.get("workloads", ""))
            return
        except ValidationError as exc:
            aliases = {
                "contract.workloads": "workloads",
                "contract.check": "check",
                "contract.threshold": "threshold",
                "contract.metric": "metric",
                "contract.hooks.prepare": "prepare",
            }
            loose = show_errors(fields, exc, aliases)
            workload_msgs = [ln for ln in loose if "workloads" in ln]
            werr.update("\n".join(workload_msgs or loose))
            return
        self.session_screen.save_session(session)


class _FieldErrors(Exception):
    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(errors.values()))
        self.errors = errors


def _msg(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
    return str(exc).removeprefix("Value error, ")


def contract_table(s: m.Session) -> Table:
    c = s.contract
    t = Table.grid(padding=(0, 1))
    t.add_column(style="dim", no_wrap=True)
    t.add_column(overflow="fold")
    # every stored string is a Text from shown(): never markup, controls made visible
    t.add_row("title", shown(s.title, style="bold"))
    t.add_row("repository", shown(s.repo))
    metric = plain(c.metric.name) + (
        f" ({c.metric.source.value}: {plain(c.metric.pattern)})" if c.metric.pattern else ""
    )
    unit = plain(c.metric.unit) or "no unit"
    t.add_row("metric", Text(f"{metric}, {unit}, {c.metric.direction.value} is better"))
    for w in c.workloads:
        t.add_row(
            "workload",
            Text.assemble(
                shown(w.name, style="bold"),
                "  ",
                shown(w.command, LONG_LIMIT),
                (f"  [{w.kind.value}, {w.scope.value}]", "dim"),
            ),
        )
    t.add_row(
        "check",
        shown(c.check, LONG_LIMIT)
        if c.check
        else Text("none: variants are compared on speed only", style="yellow"),
    )
    if c.hooks.prepare:
        t.add_row("before each run", shown(c.hooks.prepare, LONG_LIMIT))
    t.add_row("threshold", f"±{c.threshold * 100:.1f}%")
    return t


# ---------------------------------------------------------------------------- baseline


class BaselinePane(StepPane):
    step = m.StepName.BASELINE
    GUIDANCE = (
        "Pin what every variant is compared against: an exact snapshot of the tree, the "
        "machine's fingerprint and the contract, measured in whole process runs. Its two "
        "halves must agree with each other before anything is compared to it."
    )
    BINDINGS = [
        Binding("r", "record", "record baseline"),
        Binding("s", "stop", "stop"),
    ]

    def body(self) -> ComposeResult:
        yield Static("", id="baseline-info")
        with Horizontal(classes="row", id="baseline-settings"):
            # 24 runs: twelve per half, so a few stray slow processes (a noisy neighbour
            # on a shared machine) cannot by themselves fail the split-half check.
            yield Field("runs", "Runs per workload", "24")
            yield Field("warmup", "Warm-up runs", "1")
        with Vertical(id="baseline-progress", classes="progress-box"):
            yield Static("", id="baseline-status")
            yield ProgressBar(total=100, show_eta=False, id="baseline-bar")

    def next_hint(self, view: SessionView | None) -> str:
        if view is None:
            return "save the contract first."
        if self.session_screen.busy == "baseline":
            return "measuring… press s to stop after the current run."
        b = view.baseline
        if b is None:
            return "press r to record the baseline."
        if b.reproducibility is m.Reproducibility.UNJUDGED:
            return "this baseline was not judged (stopped early?): press r to record it again."
        if b.reproducibility is m.Reproducibility.NOT_REPRODUCIBLE:
            return (
                "the baseline does not agree with itself: quiet the machine or fix the reset, "
                "then r to record again."
            )
        return "answer the preflight (n)."

    def refresh_body(self, view: SessionView | None) -> None:
        info = self.query_one("#baseline-info", Static)
        busy = self.session_screen.busy == "baseline"
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
        bar.update(total=total, progress=int(getattr(p, "runs_done", 0) or 0))
        eta = fmt_eta(getattr(p, "eta_s", None))
        self.query_one("#baseline-status", Static).update(
            Text.assemble(
                (f"runs {p.runs_done}/{p.runs_total}", "bold"),
                f" · ETA {eta} · s stops cleanly\n",
                (f"{p.phase}: {plain(p.message or '', 1000)}", "dim"),
            )
        )

    def action_record(self) -> None:
        f = {x.field_name: x for x in self.query(Field)}
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
        f["runs"].set_error("")
        self.session_screen.start_baseline(runs=runs, warmup=max(warmup, 0))

    def action_stop(self) -> None:
        self.session_screen.stop_work()


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
    style = {
        m.Reproducibility.REPRODUCIBLE: "bold green",
        m.Reproducibility.NOT_REPRODUCIBLE: "bold red",
    }.get(b.reproducibility, "yellow")
    t.add_row(
        "reproducible",
        Text.assemble(
            (b.reproducibility.value.replace("_", " "), style),
            "  ",
            shown(b.reproducibility_detail, LONG_LIMIT),
        ),
    )
    unit = plain(view.session.contract.metric.unit)
    for name, value in b.reference.items():
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


# ---------------------------------------------------------------------------- preflight

Q = m.PreflightQuestion
QUESTIONS: dict[m.PreflightQuestion, str] = {
    Q.LIFETIME: "How long do the buffers you will touch live, and who releases them?",
    Q.BACKING: "What memory holds them: device, pinned or pageable host, managed?",
    Q.RESIDENCY: "Where is the data when the hot path reads it, and does it move?",
    Q.IDENTITY: "Can two names refer to the same storage (views, aliasing, reuse)?",
    Q.MUTATION: "What writes to it inside the measured region, and in what order?",
    Q.SCHEDULE: "What else runs at the same time: streams, host threads, copies?",
}

KIND_CHOICES = [
    ("measured", m.PreflightAnswerKind.MEASURED.value),
    ("handed off", m.PreflightAnswerKind.HANDED_OFF.value),
    ("does not apply", m.PreflightAnswerKind.NOT_APPLICABLE.value),
    ("unknown", m.PreflightAnswerKind.UNKNOWN.value),
]
AREA_CHOICES = [(a.value.replace("_", " "), a.value) for a in m.ConcernArea]


class PreflightPane(StepPane):
    step = m.StepName.PREFLIGHT
    GUIDANCE = (
        "Six questions about the memory and the schedule the change will touch. Answer from "
        "a measurement, hand one to the area that owns it, or say why it does not apply. "
        "An honest 'unknown' is allowed, and it shows in the record."
    )
    BINDINGS = [Binding("ctrl+s,f2", "save", "save answers")]

    def body(self) -> ComposeResult:
        for q, text in QUESTIONS.items():
            with Vertical(classes="question", id=f"q-{q.value}"):
                yield Label(Text.assemble((q.value, "bold"), "  ", text))
                with Horizontal(classes="row"):
                    yield Field(f"{q.value}.kind", "answer", "unknown", choices=KIND_CHOICES)
                    yield Field(
                        f"{q.value}.concern_area", "goes to", choices=AREA_CHOICES, allow_blank=True
                    )
                yield Field(
                    f"{q.value}.text",
                    "what you know",
                    placeholder="measurement, evidence or reason",
                )

    def next_hint(self, view: SessionView | None) -> str:
        if view is None:
            return "save the contract first."
        n = len(view.preflight)
        if n < len(QUESTIONS):
            return f"{n} of {len(QUESTIONS)} answered; ctrl+s saves what you wrote."
        return "write hypotheses before editing code (n)."

    filled: dict[m.PreflightQuestion, tuple[str, str, str]]

    def refresh_body(self, view: SessionView | None) -> None:
        if view is None:
            return
        # what the form shows now: a save writes only the questions edited since
        self.filled = {a.question: _answer_key(a) for a in view.preflight}
        for a in view.preflight:
            q = a.question.value
            self.query_one(f"#field-{q}-kind", Field).value = a.kind.value
            if a.concern_area is not None:
                self.query_one(f"#field-{q}-concern_area", Field).value = a.concern_area.value
            self.query_one(f"#field-{q}-text", Field).value = a.text
        for f in self.query(Field):
            f.disabled = self.readonly

    def action_save(self) -> None:
        view = self.view
        if view is None or self.readonly:
            return
        answers: list[m.PreflightAnswer] = []
        bad = False
        for q in QUESTIONS:
            fields = {
                f.field_name.split(".", 1)[1]: f
                for f in self.query(Field)
                if f.field_name.startswith(q.value + ".")
            }
            clear_errors(fields.values())
            kind = fields["kind"].value or "unknown"
            text = fields["text"].value
            area = fields["concern_area"].value or None
            existing = next((a for a in view.preflight if a.question is q), None)
            if kind == "unknown" and not text.strip() and existing is None:
                continue
            shown_before = getattr(self, "filled", {}).get(q, ("unknown", "", ""))
            if (kind, area or "", text) == shown_before:
                continue  # not edited here: whatever is stored (maybe newer) stays
            try:
                answers.append(
                    m.PreflightAnswer(
                        session_id=view.session.id,
                        question=q,
                        kind=kind,
                        text=text,
                        concern_area=area,
                    )
                )
            except ValidationError as exc:
                bad = True
                msgs = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
                target = "concern_area" if "concern area" in msgs else "text"
                fields[target].set_error(msgs)
        if bad:
            return
        if not answers:
            self.notify("Nothing changed.", markup=False)
            return
        stored = {
            a.question: _answer_key(a)
            for a in self.session_screen.ledger.list(m.PreflightAnswer, session_id=view.session.id)
        }
        filled = getattr(self, "filled", {})
        clash = [
            a.question
            for a in answers
            if stored.get(a.question, ("unknown", "", ""))
            != filled.get(a.question, ("unknown", "", ""))
        ]
        if clash:  # answered elsewhere meanwhile, and edited here too: ask
            from tui.screens.modals import ConflictModal

            def chosen(choice: str | None) -> None:
                if choice == "reload":
                    self.session_screen.reload()
                elif choice == "merge":
                    self.session_screen.save_models(
                        *answers, note=f"saved {len(answers)} answer(s)"
                    )

            changed = [(q.value, " · ".join(x for x in stored.get(q, ()) if x)) for q in clash]
            self.app.push_screen(
                ConflictModal("preflight", changed, [a.question.value for a in answers]), chosen
            )
            return
        self.session_screen.save_models(*answers, note=f"saved {len(answers)} answer(s)")


def _answer_key(a: m.PreflightAnswer) -> tuple[str, str, str]:
    """An answer as the form holds it: kind, concern area, text."""
    return (a.kind.value, a.concern_area.value if a.concern_area else "", a.text)


# ---------------------------------------------------------------------------- hypotheses

DIRECTION_CHOICES = [("metric goes down", "lower"), ("metric goes up", "higher")]
CONFIDENCE_CHOICES = [(c.value, c.value) for c in m.Confidence]


class HypothesesPane(StepPane):
    step = m.StepName.HYPOTHESES
    GUIDANCE = (
        "Write down why a change should help before making it: what you see, the mechanism, "
        "what the metric and an independent signal should do, and the cheapest test that "
        "would prove you wrong. Similar ideas rejected before are shown as you type."
    )
    BINDINGS = [
        Binding("ctrl+s,f2", "save", "save hypothesis"),
        Binding("e", "edit", "edit selected"),
        Binding("x", "status", "set status"),
        Binding("w", "write", "write new"),
    ]

    editing: str | None = None
    editing_from: m.Hypothesis | None = None

    def body(self) -> ComposeResult:
        yield DataTable(id="hyp-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="hyp-similar")
        with Vertical(id="hyp-form"):
            yield Static("", id="hyp-form-title", classes="form-title")
            yield Field("title", "Title", placeholder="e.g. fuse the max and exp passes")
            yield Field("symptom", "Symptom (what you observe)")
            yield Field("mechanism", "Mechanism (why it happens)")
            yield Field(
                "predicted_effect",
                "Predicted effect on the metric",
                placeholder="e.g. 20-30% less time",
            )
            with Horizontal(classes="row"):
                yield Field("predicted_direction", "Direction", "lower", choices=DIRECTION_CHOICES)
                yield Field("confidence", "Confidence", "medium", choices=CONFIDENCE_CHOICES)
            yield Field(
                "predicted_evidence",
                "Independent evidence that should move",
                placeholder="e.g. fewer kernel launches",
            )
            yield Field("falsifier", "Cheapest falsifier")

    def built(self) -> None:
        t = self.query_one("#hyp-table", DataTable)
        t.add_columns("id", "title", "status", "conf", "variants")

    def fields(self) -> list[Field]:
        return list(self.query("#hyp-form Field").results(Field))

    def next_hint(self, view: SessionView | None) -> str:
        if view is None:
            return "save the contract first."
        if not view.hypotheses:
            return "press w to write the first hypothesis, ctrl+s to save it."
        if not view.variants:
            return "turn a hypothesis into a variant in the Round step (5, then a)."
        return "go to the round (n) or add another hypothesis."

    def refresh_body(self, view: SessionView | None) -> None:
        t = self.query_one("#hyp-table", DataTable)
        t.clear()
        self.query_one("#hyp-form").display = not self.readonly and view is not None
        title = "Editing " + plain(self.editing[:8]) if self.editing else "New hypothesis"
        self.query_one("#hyp-form-title", Static).update(Text(title, style="bold"))
        if view is None:
            return
        t.display = bool(view.hypotheses)
        for h in view.hypotheses:
            n = sum(1 for v in view.variants if v.hypothesis_id == h.id)
            t.add_row(
                cell(h.id[:8]),
                _clip(h.title, 34 if self.session_screen.has_class("-narrow") else 48),
                status_text(h.status),
                h.confidence.value,
                str(n),
                key=h.id,
            )

    def focus_form(self) -> None:
        if self.query_one("#hyp-form").display:
            self.query_one("#field-title Input", Input).focus()

    def values(self) -> dict[str, Any]:
        vals: dict[str, Any] = {f.field_name: f.value for f in self.fields()}
        vals["predicted_direction"] = vals.get("predicted_direction") or None
        vals["confidence"] = vals.get("confidence") or "medium"
        return vals

    def on_input_changed(self, event: Input.Changed) -> None:
        if self.view is None:
            return
        self._similar_timer = getattr(self, "_similar_timer", None)
        if self._similar_timer is not None:
            self._similar_timer.stop()
        self._similar_timer = self.set_timer(0.3, self.update_similar)

    def update_similar(self) -> None:
        view = self.view
        if view is None:
            return
        vals = self.values()
        try:
            probe = m.Hypothesis(
                session_id=view.session.id,
                title=vals["title"] or "-",
                symptom=vals["symptom"],
                mechanism=vals["mechanism"],
                predicted_effect=vals["predicted_effect"],
            )
        except ValidationError:
            return
        found = similar_rejected(self.session_screen.ledger, probe)
        self.show_similar(found)

    def show_similar(self, found: list[m.Hypothesis]) -> None:
        box = self.query_one("#hyp-similar", Static)
        if not found:
            box.update("")
            box.display = False
            return
        box.display = True
        t = Text()
        t.append("Rejected before, and similar:\n", style="bold yellow")
        for h in found:
            t.append(f"  {plain(h.id[:8])} ", style="dim")
            t.append(shown(h.title, style="bold"))
            why = h.reopen_when or h.mechanism
            if why:
                t.append(f" — {plain(why)}", style="dim")
            t.append("\n")
        box.update(t)

    def action_save(self) -> None:
        view = self.view
        if view is None or self.readonly:
            return
        fields = self.fields()
        clear_errors(fields)
        vals = self.values()
        screen = self.session_screen
        if self.editing:
            # the version the form was filled from: what the person changed is told
            # apart from what changed in the ledger since
            old = self.editing_from or view.hypothesis(self.editing)
            if old is None:
                return
            try:
                m.Hypothesis.model_validate({**old.model_dump(), **vals})
                screen.edit_hypothesis(old, vals)
            except ValidationError as exc:
                show_errors(fields, exc)
                return
            self.editing = None
            self.clear_form()
            return
        try:
            m.Hypothesis(session_id=view.session.id, **vals)
        except ValidationError as exc:
            show_errors(fields, exc)
            return
        similar = screen.add_hypothesis(vals)
        if similar is not None:
            self.clear_form()
            self.show_similar(similar)

    def clear_form(self) -> None:
        for f in self.fields():
            if f.choices is None:
                f.value = ""

    def action_write(self) -> None:
        if self.readonly:
            return
        self.editing = None
        self.clear_form()
        self.show(self.view)
        self.focus_form()

    def selected(self) -> m.Hypothesis | None:
        t = self.query_one("#hyp-table", DataTable)
        if self.view is None or t.row_count == 0:
            return None
        key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
        return self.view.hypothesis(key)

    def action_edit(self) -> None:
        h = self.selected()
        if h is None or self.readonly:
            return
        self.editing = h.id
        self.editing_from = h
        for f in self.fields():
            v = getattr(h, f.field_name)
            f.value = "" if v is None else (v.value if hasattr(v, "value") else str(v))
        self.show(self.view)
        self.focus_form()

    def action_status(self) -> None:
        h = self.selected()
        if h is None or self.readonly:
            return
        self.session_screen.ask_hypothesis_status(h)


def _clip(text: str, width: int) -> Text:
    return cell(text, width, brief=True)


def status_text(status: m.HypothesisStatus) -> Text:
    style = {
        m.HypothesisStatus.SUPPORTED: "green",
        m.HypothesisStatus.REJECTED: "red",
        m.HypothesisStatus.WEAKENED: "yellow",
        m.HypothesisStatus.REOPENABLE: "cyan",
    }.get(status, "")
    return Text(status.value, style=style)
