"""The results step: each variant's verdict, correctness, audits and residual."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group
from rich.padding import Padding
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from session import models as m
from session.api import (
    RESIDUAL_WORDS,
    StepKeys,
    confirm_residual_words,
    error_tail,
    results_next,
    untrusted_round,
)
from session.read_model import SessionView, residual_suggestion
from session.verdicts import error_headline, of_round, round_untrusted, two_modes
from tui.display import plain
from tui.screens.pane_messages import AskResidual
from tui.screens.step_base import StepPane
from tui.screens.steps.round import RoundPane, comparison_table
from tui.widgets.words import count


class ResultsPane(StepPane):
    step = m.StepName.RESULTS
    GUIDANCE = (
        "Read each variant against the band where a change is too small to tell from noise. "
        "Then check that it computes the same thing, that the mechanism moved (audits), and "
        "that the machine behaved (trust). Confirm how the outcome differs from what you predicted."
    )
    BINDINGS = [
        Binding(
            "c",
            "confirm",
            "confirm residual",
            tooltip="Confirm the residual of a variant",
            id="results.confirm",
        ),
        Binding(
            "left_square_bracket",
            "round(-1)",
            "older round",
            tooltip="Show the older round",
            id="results.older_round",
        ),
        Binding(
            "right_square_bracket",
            "round(1)",
            "newer round",
            tooltip="Show the newer round",
            id="results.newer_round",
        ),
    ]

    round_index: int = -1

    def body(self) -> ComposeResult:
        yield Static("", id="results-table")
        yield Static("", id="results-detail")

    def next_hint(self, view: SessionView | None) -> str:
        to_round = self.step_key(m.StepName.ROUND)
        if view is None or not view.rounds:
            return f"run a round first ({to_round}, then {self.key_in(RoundPane, 'round.run')})."
        last = view.rounds[-1]
        why = round_untrusted(last)
        if why and last.baseline_reproduced is False:
            again = self.key_in(RoundPane, "round.rebaseline")
            return untrusted_round(
                last.number, why, baseline_moved=True, keys=f"{to_round}, then {again}"
            )
        todo = [
            v
            for v in view.variants
            if view.residual_of(v.id) is None and residual_suggestion(self.context.ledger, view, v)
        ]
        if todo:
            return results_next(todo[0].name, self.step_keys(confirm="results.confirm"))
        return results_next(None, self.step_keys())

    def current_round(self, view: SessionView) -> m.Round | None:
        if not view.rounds:
            return None
        i = max(-len(view.rounds), min(self.round_index, -1))
        return view.rounds[i]

    def refresh_body(self, view: SessionView | None) -> None:
        table = self.query_one("#results-table", Static)
        detail = self.query_one("#results-detail", Static)
        if view is None or not view.rounds:
            table.update(Text("No results yet.", style="dim"))
            detail.update("")
            return
        rnd = self.current_round(view)
        assert rnd is not None
        table.update(
            comparison_table(view, rnd, view.comparisons.get(rnd.id, []), width=self.text_width())
        )
        detail.update(
            results_detail(
                view, rnd, self.context.ledger, self.step_keys(confirm="results.confirm")
            )
        )

    def action_round(self, step: int) -> None:
        if self.view is None or not self.view.rounds:
            return
        self.round_index = max(-len(self.view.rounds), min(-1, self.round_index + step))
        self.show(self.view)

    def action_confirm(self) -> None:
        if self.readonly or self.view is None or not self.view.variants:
            return
        self.post_message(AskResidual())


def results_detail(
    view: SessionView, rnd: m.Round, ledger: Any, keys: StepKeys | None = None
) -> Group:
    parts: list[Any] = []
    # the checks and audits this round rests on, once each (a later round re-checks)
    base_audits = {a.workload: a for a in of_round(_arm(view.audits, "baseline"), rnd)}
    for v in view.variants:
        if v.id not in rnd.variant_ids and rnd.variant_ids:
            continue
        head = Text()
        head.append(f"\n{plain(v.name)}", style="bold underline")
        h = view.hypothesis(v.hypothesis_id)
        if h is not None:
            head.append(f"  ← {plain(h.title)}", style="dim")
        parts.append(head)
        checks = of_round(view.correctness_of(v.id), rnd)
        if not checks:
            parts.append(Text("  correctness: not checked", style="yellow"))
        for c in checks:
            line = Text("  correctness ")
            line.append(f"{plain(c.workload)}: ", style="dim")
            line.append(
                "pass" if c.passed else "FAIL", style="bold green" if c.passed else "bold magenta"
            )
            if c.exact:
                line.append(" bit-identical", style="green")
            if c.suggested_class:
                line.append(f"  class {c.suggested_class.value}", style="cyan")
            parts.append(line)
            for s in c.stats:
                parts.append(error_line(s))
            if not c.passed and not c.stats and c.output_tail:
                last = c.output_tail.strip().splitlines()[-1]
                parts.append(Text("    " + plain(last, 100), style="dim"))
            parts.extend(check_detail_lines(c))
        for a in of_round(_arm(view.audits, v.id), rnd):
            b = base_audits.get(a.workload)
            parts.append(audit_line(a, b))
        cmps = [c for c in view.comparisons.get(rnd.id, []) if c.variant_id == v.id]
        flags = [
            (c.workload, c.untrusted_runs, c.failed_runs)
            for c in cmps
            if c.untrusted_runs or c.failed_runs
        ]
        if flags:
            for w, u, f in flags:
                parts.append(
                    Text(
                        f"  trust {plain(w)}: {count(u, 'run')} quarantined, {f} failed",
                        style="yellow",
                    )
                )
        else:
            parts.append(Text("  trust: no run quarantined or failed", style="dim"))
        for cmp in cmps:  # runs in two modes: the verdict is untrusted (the words say why)
            if words := two_modes(cmp, rnd):
                parts.append(Text(f"  trust {plain(cmp.workload)}: {plain(words)}", style="yellow"))
        res = view.residual_of(v.id)
        got = residual_suggestion(ledger, view, v)
        sug = got[0] if got else None
        line = Text("  residual ")
        if res is not None and res.confirmed is not None:
            line.append(f"{RESIDUAL_WORDS[res.confirmed]} (confirmed)", style="bold")
        elif sug is not None:
            line.append(f"{RESIDUAL_WORDS[sug]}? ", style="bold yellow")
            why = f"{plain(got[1], 1000)} " if got and got[1] else ""
            line.append(f"{why}{confirm_residual_words(keys or StepKeys())}", style="dim")
        else:
            line.append("no suggestion yet", style="dim")
        parts.append(line)
    return Group(*(hang(p) if isinstance(p, Text) else p for p in parts))


def _arm(audits: list[m.Audit], arm: str) -> list[m.Audit]:
    return [a for a in audits if a.arm == arm]


def hang(line: Text) -> Any:
    """A detail line whose wrapped rest keeps the line's own indent."""
    n = len(line.plain) - len(line.plain.lstrip(" "))
    if n == 0:
        return line
    return Padding(line[n:], (0, 0, 0, n))


def check_detail_lines(c: m.CorrectnessResult) -> list[Text]:
    """What else the check found: a side's exception, its warnings (a redefined
    get_inputs()), the stress trials that failed and any repeat-call differences."""
    out: list[Text] = []
    for w in c.warnings:
        out.append(Text("    warning " + plain(w, 300), style="yellow"))
    failed_stress = [x for x in c.stress if not x.get("passed")]
    if c.stress:
        kinds = ", ".join(plain(x.get("kind"), 40) for x in failed_stress)
        out.append(
            Text(
                f"    stress: {len(c.stress) - len(failed_stress)} of {len(c.stress)} passed"
                + (f"; FAILED {kinds}" if kinds else ""),
                style="bold magenta" if failed_stress else "dim",
            )
        )
    for x in failed_stress:
        out.append(
            Text(
                f"      {plain(x.get('kind'), 40)}: {plain(x.get('mismatches'), 40)} mismatches, "
                f"NaN {plain(x.get('nan_ref'), 20)}→{plain(x.get('nan_new'), 20)}, "
                f"Inf {plain(x.get('inf_ref'), 20)}→{plain(x.get('inf_new'), 20)}",
                style="dim",
            )
        )
    for side in ("baseline", "variant"):
        found = c.nondeterminism.get(side)
        if found:
            out.append(
                Text(
                    f"    nondeterministic ({side}): two calls on the same input differ  "
                    f"{plain(json.dumps(found, default=str), 200)}",
                    style="yellow",
                )
            )
    if c.error:
        out.append(Text("    error:", style="bold red"))
        for line in error_tail(c.error).splitlines():
            out.append(Text("      " + plain(line, 300), style="dim"))
    return out


def _g(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def error_line(s: m.ErrorStats) -> Text:
    """One output's errors in the words of `error_headline`: NaN/Inf counted first, so a
    broken output never reads as tiny errors."""
    t = Text("    ")
    t.append(f"{plain(s.output)}: ", style="dim")
    headline = plain(error_headline(s), 1000)
    if not s.shape_equal or not s.dtype_equal:
        t.append(headline, style="bold red")
        return t
    if s.bit_identical:
        t.append(headline, style="green")
        return t
    more_nonfinite = s.nan_new + s.inf_new > s.nan_ref + s.inf_ref
    broken = more_nonfinite or not s.nonfinite_positions_match
    t.append(headline, style="bold magenta" if broken else ("yellow" if s.mismatches else ""))
    if s.ulp_max is not None:
        t.append(f"  ulp max {_g(s.ulp_max)}", style="dim")
    if s.worst_index:
        t.append(f"  worst at {plain(s.worst_index)}", style="dim")
    return t


def audit_line(a: m.Audit, b: m.Audit | None) -> Text:
    t = Text("  audit ")
    t.append(f"{plain(a.workload)}: ", style="dim")

    def delta(name: str, new: int | None, old: int | None, fmt: str = "{}") -> None:
        if new is None:
            return
        t.append(f"{name} ")
        if old is None:
            t.append(fmt.format(new) + "  ")
            return
        t.append(
            f"{fmt.format(old)}→{fmt.format(new)}",
            style="green" if new < old else "red" if new > old else "",
        )
        t.append("  ")

    delta("launches", a.kernel_launches, b.kernel_launches if b else None)
    delta("ops", a.operator_count, b.operator_count if b else None)
    delta("allocs", a.allocation_count, b.allocation_count if b else None)
    delta(
        "peak MiB",
        None if a.peak_bytes is None else a.peak_bytes // 2**20,
        None if b is None or b.peak_bytes is None else b.peak_bytes // 2**20,
    )
    return t
