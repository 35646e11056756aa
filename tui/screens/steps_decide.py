"""The last four steps: round, results, disposition, record."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, ProgressBar, Static

from session import models as m
from tui.bridge import SessionView, residual_suggestion, suggest_residual
from tui.display import cell, plain
from tui.screens.step_base import StepPane
from tui.widgets.form import Field
from tui.widgets.ratio import common_span, fmt_ci, fmt_eta, fmt_ratio, ratio_bar, verdict_text

# ---------------------------------------------------------------------------- round


class RoundPane(StepPane):
    step = m.StepName.ROUND
    GUIDANCE = (
        "Each variant changes one thing and points at one hypothesis. A round runs the "
        "baseline and every variant once per block, in a fresh random order, and stops as "
        "soon as each comparison is decided."
    )
    BINDINGS = [
        Binding("a", "add_variant", "add variant"),
        Binding("r", "run", "run round"),
        Binding("s", "stop", "stop"),
    ]

    def body(self) -> ComposeResult:
        yield DataTable(id="variant-table", cursor_type="row", zebra_stripes=True)
        with Horizontal(classes="row", id="round-settings"):
            yield Field("min_blocks", "Min blocks", "10")
            yield Field("max_blocks", "Max blocks", "30")
        with Vertical(id="round-progress", classes="progress-box"):
            yield Static("", id="round-status")
            yield ProgressBar(total=30, show_eta=False, id="round-bar")
        yield Static("", id="round-live")

    def built(self) -> None:
        self.query_one("#variant-table", DataTable).add_columns(
            "variant", "kind", "hypothesis", "from", "files"
        )

    def next_hint(self, view: SessionView | None) -> str:
        if view is None:
            return "save the contract first."
        if self.session_screen.busy == "round":
            return "measuring… press s to stop cleanly after the current run."
        if view.baseline is None:
            return "record a baseline first (2)."
        if not view.variants:
            return "press a to add a variant from a git ref."
        return "press r to run a round with these variants."

    def refresh_body(self, view: SessionView | None) -> None:
        t = self.query_one("#variant-table", DataTable)
        t.clear()
        busy = self.session_screen.busy == "round"
        self.query_one("#round-progress").display = busy
        self.query_one("#round-settings").display = (
            not busy and not self.readonly and view is not None
        )
        if view is None:
            return
        t.display = bool(view.variants)
        for v in view.variants:
            h = view.hypothesis(v.hypothesis_id)
            t.add_row(
                cell(v.name, style="bold"),
                v.kind.value,
                _clip(h.title, 32) if h else Text("none", style="yellow"),
                cell(v.source or v.snapshot.commit[:10]),
                str(v.files_changed),
                key=v.id,
            )
        if not busy:
            rnd = view.last_round
            live = self.query_one("#round-live", Static)
            if rnd is not None:
                live.update(
                    comparison_table(
                        view, rnd, view.comparisons.get(rnd.id, []), width=self.content_size.width
                    )
                )
            else:
                live.update("")

    @property
    def narrow(self) -> bool:
        return self.session_screen.has_class("-narrow")

    def progress(self, p: Any) -> None:
        bar = self.query_one("#round-bar", ProgressBar)
        mx = max(int(p.max_blocks or 0), 1)
        bar.update(total=mx, progress=min(int(p.block or 0), mx))
        st = Text(no_wrap=True, overflow="ellipsis")
        st.append(f"block {p.block} of ≤{p.max_blocks}", style="bold")
        st.append(
            f" · runs {p.runs_done}/{p.runs_total} · ETA {fmt_eta(p.eta_s)} · s stops cleanly\n"
        )
        st.append(f"{p.phase}: {plain(p.message or '', 1000)}", style="dim")
        self.query_one("#round-status", Static).update(st)
        view = self.view
        if view is not None and p.comparisons:
            rnd = view.last_round
            fake = rnd or m.Round(session_id=view.session.id, baseline_id="-")
            self.query_one("#round-live", Static).update(
                comparison_table(
                    view, fake, list(p.comparisons), width=self.content_size.width, live=True
                )
            )

    def action_add_variant(self) -> None:
        if self.readonly or self.view is None:
            return
        self.session_screen.ask_variant()

    def action_run(self) -> None:
        if self.readonly or self.view is None:
            return
        f = {x.field_name: x for x in self.query(Field)}
        try:
            lo, hi = int(f["min_blocks"].value), int(f["max_blocks"].value)
            if lo < 6 or hi < lo:
                raise ValueError
        except ValueError:
            f["max_blocks"].set_error("whole numbers, 6 ≤ min ≤ max: fewer blocks can never decide")
            return
        f["max_blocks"].set_error("")
        self.session_screen.start_round(min_blocks=lo, max_blocks=hi)

    def action_stop(self) -> None:
        self.session_screen.stop_work()


def comparison_table(
    view: SessionView,
    rnd: m.Round,
    rows: list[m.Comparison],
    *,
    width: int = 70,
    live: bool = False,
) -> Any:
    """Two lines per comparison: the numbers, then the interval drawn against the band."""
    threshold = rnd.threshold if rnd.baseline_id != "-" else view.session.contract.threshold
    failed = {c.variant_id for c in view.correctness if not c.passed}
    width = max(width, 40)
    out = Text(no_wrap=True, overflow="ellipsis")
    if not live:
        out.append(f"Round {rnd.number}", style="bold")
        out.append(f" · {rnd.status.value} · {rnd.blocks} blocks", style="dim")
        if rnd.baseline_check is not None:
            ok = rnd.baseline_reproduced is not False
            out.append(" · baseline check ")
            out.append(f"{rnd.baseline_check:.3f}", style="green" if ok else "bold red")
            if not ok:
                out.append(" not reproduced: verdicts untrusted", style="bold red")
    else:
        out.append("Live estimates", style="bold")
    out.append("\n")
    if not rows:
        out.append("no comparisons yet", style="dim")
        return out
    span = common_span([(c.ci_low, c.ci_high) for c in rows], threshold)
    names = {c.variant_id: plain(view.variant_name(c.variant_id)) for c in rows}
    workloads = {c.workload: plain(c.workload) for c in rows}
    name_w = min(max(len(n) for n in names.values()), 14)
    wl_w = min(max(len(w) for w in workloads.values()), 12)
    out.append(
        f"{'variant':<{name_w}}  {'workload':<{wl_w}}  {'ratio':>6}  {'95% CI':<16}  verdict\n",
        style="bold",
    )
    for c in rows:
        broken = c.variant_id in failed
        out.append(f"{names[c.variant_id][:name_w]:<{name_w}}  ", style="bold")
        out.append(f"{workloads[c.workload][:wl_w]:<{wl_w}}  ")
        out.append(f"{fmt_ratio(c.ratio):>6}  ")
        out.append(f"{fmt_ci(c.ci_low, c.ci_high):<16}  ")
        out.append_text(verdict_text(c.verdict, broken=broken))
        if c.verdict is m.Verdict.INCONCLUSIVE and c.blocks_needed:
            out.append(f" +{c.blocks_needed}", style="dim")
        out.append("\n")
        pad = name_w + 2
        bar_w = max(min(width - pad - 2, 56), 15)
        out.append(" " * pad)
        style = "BROKEN" if broken else c.verdict.value
        out.append_text(ratio_bar(c.ratio, c.ci_low, c.ci_high, threshold, bar_w, style, span))
        notes = []
        if broken:
            notes.append(("check failed", "magenta"))
        if c.untrusted_runs or c.failed_runs:
            notes.append((f"{c.untrusted_runs} quarantined, {c.failed_runs} failed", "yellow"))
        out.append("\n")
        for note, nstyle in notes:
            out.append(" " * pad + "↳ " + note + "\n", style=nstyle)
    out.append(
        f"bar: 95% CI, log axis · │ no change · ··· ±{threshold * 100:g}% noise", style="dim"
    )
    return out


# ---------------------------------------------------------------------------- results


class ResultsPane(StepPane):
    step = m.StepName.RESULTS
    GUIDANCE = (
        "Read each variant against the band where a change is too small to tell from noise. "
        "Then check that it computes the same thing, that the mechanism moved (audits), and "
        "that the machine behaved (trust). Confirm how the outcome differs from what you predicted."
    )
    BINDINGS = [
        Binding("c", "confirm", "confirm residual"),
        Binding("left_square_bracket", "round(-1)", "older round"),
        Binding("right_square_bracket", "round(1)", "newer round"),
    ]

    round_index: int = -1

    def body(self) -> ComposeResult:
        yield Static("", id="results-table")
        yield Static("", id="results-detail")

    def next_hint(self, view: SessionView | None) -> str:
        if view is None or not view.rounds:
            return "run a round first (5, then r)."
        todo = [
            v
            for v in view.variants
            if view.residual_of(v.id) is None
            and suggest_residual(view, v, self.session_screen.ledger)
        ]
        if todo:
            return f"press c to confirm the residual of {todo[0].name}; then decide (n)."
        return "decide each variant (n)."

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
            comparison_table(
                view, rnd, view.comparisons.get(rnd.id, []), width=self.content_size.width
            )
        )
        detail.update(results_detail(view, rnd, self.session_screen.ledger))

    def action_round(self, step: int) -> None:
        if self.view is None or not self.view.rounds:
            return
        self.round_index = max(-len(self.view.rounds), min(-1, self.round_index + step))
        self.show(self.view)

    def action_confirm(self) -> None:
        if self.readonly or self.view is None or not self.view.variants:
            return
        self.session_screen.ask_residual()


RESIDUAL_WORDS: dict[m.ResidualClass, str] = {
    m.ResidualClass.AS_PREDICTED: "moved as predicted",
    m.ResidualClass.NOTHING_MOVED: "nothing moved: the mechanism is wrong or the change never ran",
    m.ResidualClass.MECHANISM_ONLY: "the mechanism moved, the metric did not: a cost elsewhere",
    m.ResidualClass.METRIC_ONLY: "the metric moved without the mechanism: look for a confounder",
    m.ResidualClass.OPPOSITE_SIGN: "it moved the wrong way: keep it as evidence",
}


def results_detail(view: SessionView, rnd: m.Round, ledger: Any = None) -> Group:
    parts: list[Any] = []
    base_audits = {a.workload: a for a in view.audits if a.arm == "baseline"}
    for v in view.variants:
        if v.id not in rnd.variant_ids and rnd.variant_ids:
            continue
        head = Text()
        head.append(f"\n{plain(v.name)}", style="bold underline")
        h = view.hypothesis(v.hypothesis_id)
        if h is not None:
            head.append(f"  ← {plain(h.title)}", style="dim")
        parts.append(head)
        checks = view.correctness_of(v.id)
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
        for a in view.audits:
            if a.arm != v.id:
                continue
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
                    Text(f"  trust {plain(w)}: {u} run(s) quarantined, {f} failed", style="yellow")
                )
        else:
            parts.append(Text("  trust: no run quarantined or failed", style="dim"))
        res = view.residual_of(v.id)
        got = residual_suggestion(view, v, ledger)
        sug = got[0] if got else None
        line = Text("  residual ")
        if res is not None and res.confirmed is not None:
            line.append(f"{res.confirmed.value} (confirmed)", style="bold")
            line.append(f"  {RESIDUAL_WORDS[res.confirmed]}", style="dim")
        elif sug is not None:
            line.append(f"{sug.value}? ", style="bold yellow")
            line.append(
                f"{plain(got[1] if got and got[1] else RESIDUAL_WORDS[sug], 1000)} "
                "— press c to confirm",
                style="dim",
            )
        else:
            line.append("no suggestion yet", style="dim")
        parts.append(line)
    return Group(*parts)


def _clip(text: str, width: int) -> Text:
    return cell(text, width, brief=True)


def _g(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def error_line(s: m.ErrorStats) -> Text:
    t = Text("    ")
    t.append(f"{plain(s.output)}: ", style="dim")
    if not s.shape_equal or not s.dtype_equal:
        t.append(
            f"shape/dtype differ {s.ref_shape}/{s.ref_dtype} vs {s.new_shape}/{s.new_dtype}",
            style="bold red",
        )
        return t
    if s.bit_identical:
        t.append("bit-identical", style="green")
        return t
    t.append(f"max abs {_g(s.max_abs)}  max rel {_g(s.max_rel)}  ulp max {_g(s.ulp_max)}")
    if s.mismatches:
        t.append(f"  {s.mismatches} mismatched ({s.mismatch_share:.1%})", style="yellow")
    nonfinite = s.nan_new + s.inf_new
    if nonfinite or s.nan_ref or s.inf_ref:
        t.append(
            f"  NaN {s.nan_ref}→{s.nan_new} Inf {s.inf_ref}→{s.inf_new}",
            style="bold magenta" if nonfinite > s.nan_ref + s.inf_ref else "dim",
        )
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


# ---------------------------------------------------------------------------- disposition

CHOICE_WORDS: dict[m.DispositionChoice, str] = {
    m.DispositionChoice.KEEP_DEFAULT: "keep as the default",
    m.DispositionChoice.KEEP_GUARDED: "keep behind a guard or flag",
    m.DispositionChoice.KEEP_LOCAL: "keep as a local micro-optimization only",
    m.DispositionChoice.REJECT: "reject",
    m.DispositionChoice.NEED_EVIDENCE: "need more evidence",
}


class DispositionPane(StepPane):
    step = m.StepName.DISPOSITION
    GUIDANCE = (
        "Decide each variant. Keeping one needs a passing check, a decided round and its "
        "numerical class; a change of precision or semantics also needs your explicit "
        "acceptance and a guard. A rejected variant says what would reopen it."
    )
    BINDINGS = [Binding("d", "decide", "decide selected")]

    def body(self) -> ComposeResult:
        yield DataTable(id="disp-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="disp-gates")

    def built(self) -> None:
        self.query_one("#disp-table", DataTable).add_columns(
            "variant", "decision", "class", "why / reopen when"
        )

    def next_hint(self, view: SessionView | None) -> str:
        if view is None or not view.variants:
            return "add variants and run a round first."
        todo = [v for v in view.variants if view.disposition_of(v.id) is None]
        if todo:
            return f"select a variant and press d to decide ({len(todo)} left)."
        return "every variant is decided: read and export the record (n)."

    def refresh_body(self, view: SessionView | None) -> None:
        t = self.query_one("#disp-table", DataTable)
        cursor = t.cursor_row
        t.clear()
        if view is None:
            return
        for v in view.variants:
            d = view.disposition_of(v.id)
            if d is None:
                t.add_row(
                    cell(v.name, style="bold"), Text("undecided", style="yellow"), "", "", key=v.id
                )
            else:
                style = (
                    "green"
                    if d.choice.value.startswith("keep")
                    else "red"
                    if d.choice is m.DispositionChoice.REJECT
                    else "yellow"
                )
                t.add_row(
                    cell(v.name, style="bold"),
                    Text(d.choice.value, style=style),
                    d.optimization_class.value if d.optimization_class else "—",
                    _clip(d.reason or d.reopen_when, 40),
                    key=v.id,
                )
        if t.row_count:
            t.move_cursor(row=min(max(cursor, 0), t.row_count - 1))
        self.show_gates()

    def selected(self) -> m.Variant | None:
        t = self.query_one("#disp-table", DataTable)
        if self.view is None or t.row_count == 0:
            return None
        key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
        return next((v for v in self.view.variants if v.id == key), None)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_gates()

    def show_gates(self) -> None:
        box = self.query_one("#disp-gates", Static)
        v = self.selected()
        if v is None or self.view is None:
            box.update("")
            return
        gates = self.session_screen.gates_for(v)
        t = Text()
        t.append(f"Choices for {plain(v.name)}\n", style="bold")
        for choice, problems in gates.items():
            if problems:
                t.append("  ✗ ", style="red")
                t.append(f"{CHOICE_WORDS[choice]:<40}", style="dim")
                t.append("missing: " + plain("; ".join(problems), 2000) + "\n", style="red")
            else:
                t.append("  ✓ ", style="green")
                t.append(f"{CHOICE_WORDS[choice]}\n")
        box.update(t)

    def action_decide(self) -> None:
        v = self.selected()
        if v is None or self.readonly:
            return
        self.session_screen.ask_disposition(v)

    def focus_first(self) -> None:
        self.query_one("#disp-table", DataTable).focus()


# ---------------------------------------------------------------------------- record


class RecordPane(StepPane):
    step = m.StepName.RECORD
    GUIDANCE = (
        "The decision record: what was measured, against what, what was decided and why. "
        "Press x to write it as markdown and JSON."
    )
    BINDINGS = [Binding("x", "export", "export record")]

    def body(self) -> ComposeResult:
        from textual.widgets import Markdown  # markdown-it costs 0.1 s: only when shown

        yield Markdown("", id="record-md")

    def next_hint(self, view: SessionView | None) -> str:
        if view is None:
            return "save the contract first."
        return "press x to export the record (markdown and JSON)."

    def refresh_body(self, view: SessionView | None) -> None:
        if view is None:
            return
        md = self.session_screen.record_markdown()
        from textual.widgets import Markdown

        # stored text inside the record: controls made visible, newlines kept
        self.query_one("#record-md", Markdown).update(plain(md, None, multiline=True))

    def action_export(self) -> None:
        self.session_screen.export_record()
