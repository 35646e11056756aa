"""The contract step: the target metric, the workload matrix and the correctness check."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label, Static, TextArea

from session import models as m
from session.api import (
    HARNESS_CHECK,
    TORCH_KINDS,
    apply_env,
    contract_next,
    metric_text,
    placement_lines,
)
from session.read_model import SessionView
from tui.display import LONG_LIMIT, plain, shown
from tui.screens.pane_messages import SaveSession
from tui.screens.step_base import StepPane
from tui.widgets.form import Field, clear_errors, show_errors


class ContractPane(StepPane):
    step = m.StepName.CONTRACT
    GUIDANCE = (
        "Say what is measured and what counts as correct before anything is timed. "
        "One workload per line as NAME=COMMAND; the metric is wall time, regex:PATTERN "
        "with a group named value, or json:KEY."
    )
    BINDINGS = [
        Binding("ctrl+s,f2", "save", "save", tooltip="Save the contract", id="contract.save")
    ]

    def body(self) -> ComposeResult:
        yield Static("", id="contract-summary")
        with Vertical(id="contract-form"):
            yield Field("title", "Title", placeholder="what this session is about")
            yield Field("repo", "Repository", placeholder="/path/to/git/repo")
            yield Label("Workloads (NAME=COMMAND, one per line)", classes="field-label")
            yield TextArea("", id="workloads-text", soft_wrap=True, show_line_numbers=False)
            yield Static("", classes="error", id="workloads-error")
            yield Label(
                "Environment (NAME=KEY=VALUE per line, optional)",
                classes="field-label",
            )
            env_text = TextArea("", id="env-text", soft_wrap=True, show_line_numbers=False)
            env_text.styles.height = 3  # the stylesheet sizes only the workloads box
            yield env_text
            yield Static("", classes="error", id="env-error")
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

    def action_open(self, action: str) -> bool | None:
        return not (action == "save" and self.view is not None and self.view.baseline is not None)

    def next_hint(self, view: SessionView | None) -> str:
        return contract_next(view, self.step_keys(save="contract.save"))

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
            draft = self.context.draft
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
        self.query_one("#env-text", TextArea).text = "\n".join(
            f"{w.name}={k}={v}" for w in c.workloads for k, v in w.env.items()
        )

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
            errors["workloads"] = m.NO_WORKLOADS
        env_text = self.query_one("#env-text", TextArea).text
        env_specs = [ln.strip() for ln in env_text.splitlines() if ln.strip()]
        if "workloads" not in errors:
            try:
                workloads = apply_env(workloads, env_specs)
            except ValueError as exc:
                errors["env"] = str(exc)
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
        eerr = self.query_one("#env-error", Static)
        eerr.update("")
        try:
            session = self.build()
        except _FieldErrors as exc:
            for f in fields:
                if f.field_name in exc.errors:
                    f.set_error(exc.errors[f.field_name])
            werr.update(exc.errors.get("workloads", ""))
            eerr.update(exc.errors.get("env", ""))
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
        self.post_message(SaveSession(session))


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
        if w.kind in TORCH_KINDS:  # its figure is its own, not the contract's metric
            t.add_row("  figure", Text(metric_text(c, w), style="dim"))
        for key, value in w.env.items():
            t.add_row("  env", Text.assemble(shown(w.name), " ", shown(f"{key}={value}")))
    for line in check_lines(c):
        t.add_row("check", line)
    if c.hooks.prepare:
        t.add_row("before each run", shown(c.hooks.prepare, LONG_LIMIT))
    t.add_row("threshold", f"±{c.threshold * 100:.1f}%")
    for label, text in placement_lines(c):  # its GPU and its Slurm settings, when set
        t.add_row(label, shown(text, LONG_LIMIT))
    return t


# What the torch harness checks for every variant of a torch workload (session.torch_checks).
def check_lines(c: m.Contract) -> list[Text]:
    """Every check the round runs: the contract's command, and the harness's own for a torch
    workload; "none" only when neither runs."""
    out: list[Text] = []
    if c.check:
        out.append(shown(c.check, LONG_LIMIT))
    torch = [w.name for w in c.workloads if w.kind in TORCH_KINDS]
    if torch:
        out.append(Text(f"{', '.join(torch)}: {HARNESS_CHECK}"))
    return out or [Text("none: variants are compared on speed only", style="yellow")]
