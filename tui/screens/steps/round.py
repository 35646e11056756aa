"""The round step: add variants and run them interleaved against the baseline."""

from __future__ import annotations

import textwrap
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, ProgressBar, Static

from session import models as m
from session.api import (
    DEFAULT_RUNS,
    NO_SESSION,
    ROUND_GUIDANCE,
    Progress,
    RoundKeys,
    Session,
    advised_band_set,
    busy_next,
    error_tail,
    eta_text,
    metric_legend,
    narrow_band_question,
    ratio_text,
    round_next,
    round_problem,
    stored_outcome,
)
from session.read_model import SessionView
from session.verdicts import ci_cell, ci_heading, table_legend, verdict_for
from tui.display import cell, plain
from tui.screens.modals import ConfirmModal
from tui.screens.pane_messages import AskVariant, StartBaseline, StartRound, StopWork
from tui.screens.step_base import StepPane, clip
from tui.widgets.form import Field
from tui.widgets.ratio import common_span, ratio_bar, verdict_text


class RoundPane(StepPane):
    step = m.StepName.ROUND
    GUIDANCE = ROUND_GUIDANCE
    BINDINGS = [
        Binding(
            "a",
            "add_variant",
            "add variant",
            tooltip="Add a variant from a git ref",
            id="round.add_variant",
        ),
        Binding("r", "run", "run", tooltip="Run a round", id="round.run"),
        Binding(
            "s", "stop", "stop", tooltip="Stop the round after the current run", id="round.stop"
        ),
        Binding(
            "f",  # "fit the band": `t` is the Hypotheses step's status
            "advised_threshold",
            "band",  # short: the footer at 80 columns keeps ^q quit
            tooltip="Fill in the threshold the too-noisy baseline advises",
            id="round.advised_threshold",
        ),
        Binding(
            "g",
            "rebaseline",
            "baseline again",
            tooltip="Record the baseline again, then re-run the round",
            id="round.rebaseline",
        ),
    ]
    WRITES = StepPane.WRITES | {"rebaseline"}
    # after rebaseline: the baseline to replace, and the round's blocks, until the new one is in
    _rerun: tuple[str, int, int, float | None, float | None] | None = None
    _saw_baseline_job = False
    # the running round's variants whose check failed: every report of it keeps them (its
    # last, "done", names none), until the reloaded view holds the failed checks themselves
    _baseline_reported = False  # a report of the baseline g records again has come
    _live_round: str | None = None
    _live_failed: frozenset[str] = frozenset()

    def body(self) -> ComposeResult:
        yield DataTable(id="variant-table", cursor_type="row", zebra_stripes=True)
        with Horizontal(classes="row", id="round-settings"):
            yield Field("min_blocks", "Min blocks", "10")
            yield Field("max_blocks", "Max blocks", "30")
            yield Field("threshold", "Threshold", placeholder="contract's")
            yield Field("budget", "Budget (s)", placeholder="no limit")
        with Vertical(id="round-progress", classes="progress-box"):
            yield Static("", id="round-status")
            yield ProgressBar(total=30, show_eta=False, id="round-bar")
        yield Static("", id="round-live")

    def built(self) -> None:
        self.query_one("#variant-table", DataTable).add_columns(
            "variant", "kind", "hypothesis", "from", "files"
        )

    def action_open(self, action: str) -> bool | None:
        """Rebaseline only where a round's baseline was not reproduced (the palette keeps it)."""
        return action != "rebaseline" or _baseline_moved(self.view)

    def next_hint(self, view: SessionView | None) -> str:
        if view is None:
            return NO_SESSION
        if self.context.busy == "round":
            return busy_next(self.step_keys(stop="round.stop"), cleanly=True)
        fit = self.advised() if not self.readonly and view.last_round is None else None
        return round_next(view, self._keys(), advised=fit, typed=self._typed_threshold())

    def _keys(self) -> RoundKeys:
        return RoundKeys(
            run=self.own_key("round.run"),
            add=self.own_key("round.add_variant"),
            band=self.own_key("round.advised_threshold"),
            rebaseline=self.own_key("round.rebaseline"),
            results=self.step_key(m.StepName.RESULTS),
            baseline_step=self.step_key(m.StepName.BASELINE),
        )

    def _typed_threshold(self) -> float | None:
        """The band typed in the form (None: blank or not a number, so the contract's)."""
        try:
            return float(self.query_one("#field-threshold", Field).value)
        except (ValueError, LookupError):
            return None

    def refresh_body(self, view: SessionView | None) -> None:
        self._rerun_when_baselined(view)
        t = self.query_one("#variant-table", DataTable)
        t.clear()
        busy = self.context.busy == "round"
        rebaseline = self.context.busy == "baseline" and self._rerun is not None
        self.query_one("#round-progress").display = busy or rebaseline
        if rebaseline and not self._baseline_reported:  # until its first report comes
            self._show_progress(Progress("baseline", "recording the baseline again"))
        self.query_one("#round-settings").display = (
            not busy and not self.readonly and view is not None
        )
        if view is None:
            return
        t.display = bool(view.variants)
        rows = []
        for v in view.variants:
            h = view.hypothesis(v.hypothesis_id)
            rows.append((v, h.title if h else None, v.source or v.snapshot.commit[:10]))
        # the wide columns give way (with an ellipsis) so the table fits the pane
        own_bar = 2 if len(rows) > VARIANT_ROWS else 0
        name_w, hyp_w, from_w = variant_widths(
            self.text_width() - own_bar,
            max((len(v.name) for v, _, _ in rows), default=0),
            max((len(h) for _, h, _ in rows if h), default=0),
            max((len(src) for _, _, src in rows), default=0),
        )
        for v, title, src in rows:
            t.add_row(
                cell(v.name, name_w, style="bold", brief=True),
                v.kind.value,
                clip(title, hyp_w) if title is not None else Text("none", style="yellow"),
                clip(src, from_w),
                str(v.files_changed),
                key=v.id,
            )
        if not busy:
            rnd = view.last_round
            live = self.query_one("#round-live", Static)
            if rnd is not None:
                live.update(
                    comparison_table(
                        view, rnd, view.comparisons.get(rnd.id, []), width=self.text_width()
                    )
                )
            else:
                live.update("")

    @property
    def narrow(self) -> bool:
        return self.context.narrow

    @property
    def rebaselining(self) -> bool:
        """g is recording the baseline again: that baseline's reports are this pane's too."""
        return self._rerun is not None

    def progress(self, p: Any) -> None:
        """conduct's report: blocks and runs while the round measures; before and after its
        blocks (setup, checks, audits, cleanup) and while g records the baseline again,
        what runs in conduct's words, with runs and an ETA only where they are known."""
        if p.phase == "baseline":
            self._baseline_reported = True
        self._show_progress(p)
        self._show_live(p)

    def _show_progress(self, p: Any) -> None:
        bar = self.query_one("#round-bar", ProgressBar)
        st = Text(no_wrap=True, overflow="ellipsis")
        blocks = int(p.max_blocks or 0) > 0
        if blocks:
            mx = max(int(p.max_blocks or 0), 1)
            bar.update(total=mx, progress=min(int(p.block or 0), mx))
            st.append(f"block {p.block} of ≤{p.max_blocks}", style="bold")
            st.append(f" · runs {p.runs_done}/{p.runs_total} · ETA {eta_text(p.eta_s)}")
        else:
            total = int(p.runs_total or 0)
            if total > 0:
                bar.update(total=total, progress=min(int(p.runs_done or 0), total))
            else:
                bar.update(total=None)  # no count known: the bar only says it is working
            st.append(plain(p.message or p.phase, 1000), style="bold")
            if total > 0:
                st.append(f" · runs {p.runs_done}/{total}")
            if p.eta_s is not None:
                st.append(f" · ETA {eta_text(p.eta_s)}")
        st.append(" · s stops cleanly\n")
        if blocks:
            st.append(f"{p.phase}: {plain(p.message or '', 1000)}", style="dim")
        else:
            rerun = p.phase == "baseline" and self._rerun is not None
            phase = "rebaseline" if rerun else p.phase
            st.append(PHASE_WORDS.get(phase, phase), style="dim")
        self.query_one("#round-status", Static).update(st)

    def _show_live(self, p: Any) -> None:
        view = self.view
        if p.comparisons:
            rid = p.comparisons[0].round_id
            if rid != self._live_round:
                self._live_round, self._live_failed = rid, frozenset()
            self._live_failed |= frozenset(getattr(p, "failed_checks", ()) or ())
        if view is not None and p.comparisons:
            rnd = view.last_round
            fake = rnd or m.Round(session_id=view.session.id, baseline_id="-")
            self.query_one("#round-live", Static).update(
                comparison_table(
                    view,
                    fake,
                    list(p.comparisons),
                    width=self.text_width(),
                    live=True,
                    failed_checks=tuple(self._live_failed),
                )
            )

    def action_add_variant(self) -> None:
        if self.readonly or self.view is None:
            return
        self.post_message(AskVariant())

    def _settings(self) -> tuple[int, int, float | None, float | None] | None:
        """Min and max blocks, threshold and budget as typed, refused by the session's own
        rule (`session.api.round_problem`: the block minimum comes from the design)."""
        f = {x.field_name: x for x in self.query(Field)}
        for x in f.values():
            x.set_error("")
        try:
            lo, hi = int(f["min_blocks"].value), int(f["max_blocks"].value)
        except ValueError:
            f["max_blocks"].set_error("min and max blocks are whole numbers")
            return None
        try:
            thr = float(f["threshold"].value) if f["threshold"].value.strip() else None
            budget = float(f["budget"].value) if f["budget"].value.strip() else None
        except ValueError:
            f["threshold"].set_error("threshold and budget are numbers (e.g. 0.05, 600)")
            return None
        why = round_problem(lo, hi, thr, budget)
        if why:
            target = "max_blocks" if why.startswith("blocks") else "threshold"
            f[target].set_error(why)
            return None
        return lo, hi, thr, budget

    def action_run(self) -> None:
        if self.readonly or self.view is None:
            return
        got = self._settings()
        if got is None:
            return
        lo, hi, thr, budget = got
        start = StartRound(min_blocks=lo, max_blocks=hi, threshold=thr, budget_s=budget)
        chosen = thr if thr is not None else self.view.session.contract.threshold
        ask = narrow_band_question(chosen, self.advised(), thr, self._keys())
        if not ask:
            self.post_message(start)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.post_message(start)

        self.app.push_screen(ConfirmModal(ask), answered)

    def advised(self) -> float | None:
        """The band the latest baseline advises (None: none), read once per baseline."""
        view, ledger = self.view, self.context.ledger
        if view is None or view.baseline is None or ledger is None:
            return None
        key = (view.baseline.id, view.session.contract.threshold)
        if getattr(self, "_advised_for", None) != key:
            self._advised_for = key
            self._advised = Session(ledger, view.session.id).advised_threshold(
                view.session, view.baseline
            )
        return self._advised

    def action_advised_threshold(self) -> None:
        """One key from the baseline's too-noisy advice to a round at the band it supports."""
        if self.readonly or self.view is None:
            return
        fit = self.advised()
        if fit is None:
            self.notify("The baseline advises no other band.", markup=False)
            return
        self.query_one("#field-threshold", Field).value = f"{fit:.3g}"
        self.show(self.view)  # the Next line follows the band now set
        run = self.own_key("round.run")
        self.notify(advised_band_set(fit, run), markup=False)

    def action_rebaseline(self) -> None:
        """Record the baseline again (gpuopt baseline's defaults), then, once it is in and
        lets a round go on, re-run the round with the blocks, band and budget typed here."""
        view = self.view
        if self.readonly or view is None or view.baseline is None or self.context.busy:
            return
        got = self._settings()
        if got is None:
            return
        self._rerun = (view.baseline.id, *got)
        self._saw_baseline_job = self._baseline_reported = False
        self.post_message(StartBaseline(runs=DEFAULT_RUNS, warmup=1))

    def _rerun_when_baselined(self, view: SessionView | None) -> None:
        if self._rerun is None:
            return
        if self.context.busy == "baseline":
            self._saw_baseline_job = True
            return
        if not self._saw_baseline_job or view is None:
            return  # the baseline has not started yet
        old, lo, hi, thr, budget = self._rerun
        self._rerun = None
        b = view.baseline
        o = stored_outcome(b) if b is not None and b.id != old else None
        if o is not None and not o.blocks_round:
            self.post_message(
                StartRound(min_blocks=lo, max_blocks=hi, threshold=thr, budget_s=budget)
            )

    def action_stop(self) -> None:
        self.post_message(StopWork())


def _baseline_moved(view: SessionView | None) -> bool:
    rnd = view.last_round if view is not None else None
    return rnd is not None and rnd.baseline_reproduced is False


def comparison_table(
    view: SessionView,
    rnd: m.Round,
    rows: list[m.Comparison],
    *,
    width: int = 70,
    live: bool = False,
    failed_checks: tuple[str, ...] = (),
) -> Any:
    """Two lines per comparison: the numbers, then the interval drawn against the band.
    `failed_checks`: variants whose check failed in the running round (BROKEN at once)."""
    threshold = rnd.threshold if rnd.baseline_id != "-" else view.session.contract.threshold
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
    cols = fit_columns(width, max(len(n) for n in names.values()),
                       max(len(w) for w in workloads.values()))  # fmt: skip
    name_w, wl_w = cols
    heading = ci_heading(rows)  # a bare "CI" when rows differ: each cell then says its own
    cis = {id(c): ci_cell(c, heading) for c in rows}
    ci_w = max(CI_W, *(len(x) for x in cis.values()))
    out.append(
        f"{'variant':<{name_w}}  {'workload':<{wl_w}}  {'ratio':>{RATIO_W}}  "
        f"{heading:<{ci_w}}  verdict\n",
        style="bold",
    )
    pad = name_w + 2  # the bar and the notes sit under the workload column
    # the variant's own check on this workload, made for this round: one rule for all
    seen = [verdict_for(view, c, failed_checks) for c in rows]
    for c, shown in zip(rows, seen, strict=True):
        broken = shown.broken
        out.append(f"{ellipsize(names[c.variant_id], name_w):<{name_w}}  ", style="bold")
        out.append(f"{ellipsize(workloads[c.workload], wl_w):<{wl_w}}  ")
        out.append(f"{ratio_text(c.ratio):>{RATIO_W}}  ")
        out.append(f"{cis[id(c)]:<{ci_w}}  ")
        out.append_text(verdict_text(shown.word))
        if shown.words:  # MEASURABLE: "1.8% slower (real, below the ±2% band)"
            out.append(f" {shown.words}")
        if not shown.trusted:
            out.append(" · untrusted", style="yellow")
        if shown.more_blocks:  # about N more blocks would decide it (the legend says so)
            out.append(f" +{shown.more_blocks}", style="dim")
        out.append("\n")
        bar_w = max(min(width - pad - 2, 56), 15)
        out.append(" " * pad)
        style = "BROKEN" if broken else c.verdict.value
        out.append_text(ratio_bar(c.ratio, c.ci_low, c.ci_high, threshold, bar_w, style, span))
        notes = []
        if broken:
            why = plain(shown.failure, 500) or "check failed"  # words from stored output
            notes.append((why if why.startswith("check") else f"check failed: {why}", "magenta"))
        if c.untrusted_runs or c.failed_runs:
            notes.append((f"{c.untrusted_runs} quarantined, {c.failed_runs} failed", "yellow"))
        if c.verdict in FAILED_VERDICTS:  # the arm gave no value: say why, in its own words
            if c.note:
                notes.append((plain(c.note, 500), "red"))
            for line in error_tail(c.error, 3).splitlines():
                notes.append((plain(line, 500), "dim"))
        out.append("\n")
        for note, nstyle in notes:
            out.append_text(indented(note, pad, width, nstyle))
    if not live:  # the figure each ratio is of (a torch workload's is ms per call)
        out.append(f"ratio of {plain(metric_legend(view.session.contract), 500)}\n", style="dim")
    out.append(
        f"bar: {ci_heading(rows)}, log axis · │ no change · ··· ±{threshold * 100:g}% noise",
        style="dim",
    )
    for line in table_legend(rows, seen):  # two confidences, "+N": the session's words
        out.append("\n")
        out.append_text(_legend(line, width))
    return out


def _legend(line: str, width: int) -> Text:
    """A legend line under the table, wrapped to the width (the table itself is cut)."""
    wrapped = textwrap.wrap(line, max(width, 20), break_on_hyphens=False) or [""]
    return Text("\n".join(wrapped), style="dim")


FAILED_VERDICTS = (m.Verdict.FAILED, m.Verdict.BROKEN)
# the second line of the status while no block runs: which part of the work it is
PHASE_WORDS = {
    "snapshot": "snapshot of the code",
    "setup": "setup, before the blocks",
    "check": "correctness checks and audits, before the blocks",
    "cleanup": "cleanup, after the blocks",
    "rebaseline": "baseline recorded again (g): the round re-runs once it is in",
    "job": "cluster job",
}
RATIO_W = 6
CI_W = 16  # "0.731–0.755" and room for a wider interval, or the heading "99.8% CI"
VERDICT_W = 12  # "INCONCLUSIVE"


def ellipsize(text: str, width: int) -> str:
    """Cut to `width` cells with an ellipsis: a long name is shortened, never a column lost."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def fit_columns(width: int, longest_name: int, longest_workload: int) -> tuple[int, int]:
    """Widths of the variant and workload columns: each as wide as its header at least,
    as its longest value at most, shortened (names first) so the row fits `width`."""
    fixed = RATIO_W + CI_W + VERDICT_W + 8  # the other columns and the gaps
    name_w = max(len("variant"), min(longest_name, 24))
    wl_w = max(len("workload"), min(longest_workload, 16))
    spare = width - fixed
    while name_w + wl_w > spare and (name_w > len("variant") or wl_w > len("workload")):
        if name_w >= wl_w and name_w > len("variant"):
            name_w -= 1
        elif wl_w > len("workload"):
            wl_w -= 1
        else:
            name_w -= 1
    return name_w, wl_w


# The variant table: kind and files keep their width, and the cell padding (one each side
# of five columns) its; variant, hypothesis and from share the rest of the pane's text
# width. Past VARIANT_ROWS rows (its max-height in gpuopt.tcss, less the header) the
# table's own scroll bar takes two columns more.
VARIANT_FIXED = len("change") + len("files") + 5 * 2
VARIANT_ROWS = 9
VARIANT_MIN = (len("variant"), len("hypothesis"), len("from") + 2)
VARIANT_MAX = (24, 32, 28)


def variant_widths(width: int, name: int, hypothesis: int, source: int) -> tuple[int, int, int]:
    """Widths of the variant, hypothesis and from columns: each as its longest value (up to
    a maximum), the widest shortened first until the row fits `width`."""
    wants = [
        max(lo, min(want, hi))
        for want, lo, hi in zip((name, hypothesis, source), VARIANT_MIN, VARIANT_MAX, strict=True)
    ]
    spare = width - VARIANT_FIXED
    while sum(wants) > spare:
        shrinkable = [i for i in range(3) if wants[i] > VARIANT_MIN[i]]
        if not shrinkable:
            break
        i = max(shrinkable, key=lambda j: wants[j] - VARIANT_MIN[j])
        wants[i] -= 1
    return wants[0], wants[1], wants[2]


def indented(note: str, pad: int, width: int, style: str) -> Text:
    """A note under a row, wrapped to the width; every line keeps the indent."""
    lead = " " * pad + "↳ "
    room = max(width - len(lead), 20)
    lines = textwrap.wrap(note, room, break_long_words=True, break_on_hyphens=False) or [""]
    t = Text()
    for i, line in enumerate(lines):
        t.append((lead if i == 0 else " " * len(lead)) + line + "\n", style=style)
    return t
