"""The first screen of the record: what, where, against which baseline, and per variant
the verdict, by how much, whether it is correct, what was decided and on which round."""

from __future__ import annotations

from session import models as m
from session.md import figure, fit_width, fixed, md_cell, md_table, round_label
from session.record.model import SessionExport, SummaryRow
from session.verdicts import VERDICT_MEANINGS, ci_heading, ci_label


def summary_lines(x: SessionExport) -> list[str]:
    s = x.summary
    lines = [f"# Decision record: {md_cell(x.session.title)}", ""]
    lines.append(f"- **What:** {md_cell(s.what)}")
    if s.machine:
        lines.append(f"- **Machine:** {md_cell(s.machine)}")
    if s.baseline_id:
        medians = ", ".join(
            f"{k} {figure(v, s.units.get(k, ''))}" for k, v in s.baseline_medians.items()
        )
        head = f"- **Baseline:** {md_cell(s.baseline_id)} at commit "
        head += md_cell((s.baseline_commit or "")[:12])
        head += f", median of its own runs {md_cell(medians)}" if medians else ""
        head += f"; {md_cell(s.baseline_outcome)}" if s.baseline_outcome else ""
        if s.attempts:
            head += f" ({s.attempts} earlier attempt{'s' if s.attempts > 1 else ''}, below)"
        lines.append(head)
    else:
        lines.append("- **Baseline:** none recorded yet")
    if s.band is not None:
        lines.append(f"- **Band:** {md_cell(band_words(s.band, s.contract_band))}")
    lines.append("")
    if s.left_out:
        lines += [_left_out(s.left_out), ""]
    if not s.rows:
        lines.append("No readable variant." if s.left_out.get("variant") else "No variant yet.")
        return lines
    # Variants never measured nor decided fold into one line, and the table gives way
    # before the summary passes MAX_LINES: the first screen stays one screen.
    shown = [r for r in s.rows if r.round is not None or r.disposition != "not decided"]
    idle = [r.variant for r in s.rows if r not in shown]
    room = MAX_LINES - len(lines) - 2 - 2 - (2 if idle else 0)  # head, legend, folded
    cut = len(shown) - room + 1 if len(shown) > room else 0
    table = shown[: len(shown) - cut] if cut else shown
    if not shown:
        return [*lines, _folded(idle, after_table=False)]
    if fit_width() is not None:  # a terminal view: the narrow table, the full one in the file
        narrow = _narrow_table(table)
        # a view too narrow even for it: one line per variant, under its own head (else
        # the lines would join the list above)
        lines += (["**Per variant:**", ""] if narrow[0].startswith("- ") else []) + narrow
    else:
        heading = _ci_heading(table)
        lines += md_table(
            ["variant", "workload", "verdict", f"× faster ({heading})",
             MEDIANS_IN_ROUND, "correctness", "class", "disposition", "round"],
            [
                [
                    r.variant,
                    r.workload,
                    r.verdict or "not measured",
                    _times(r, heading),
                    f"{figure(r.baseline_median)} → {figure(r.variant_median, r.unit)}"
                    if r.baseline_median is not None or r.variant_median is not None
                    else "—",
                    r.correctness,
                    r.optimization_class,
                    r.disposition,
                    round_label(r.round) + ("" if r.round_trusted else " (untrusted)"),
                ]
                for r in table
            ],
        )  # fmt: skip
    if cut and fit_width() is not None:
        lines += ["", f"… {cut} more rows in the Rounds section."]
    elif cut:
        lines.append(f"| … {cut} more rows in the Rounds section |" + " |" * 8)
    if idle:
        lines += ["", _folded(idle, after_table=True)]
    lines += [
        "",
        legend(x) + f" BROKEN: {VERDICT_MEANINGS['BROKEN']}.",
    ]
    return lines


MAX_LINES = 40
# the medians of the round's own runs, beside the baseline's recorded median above
MEDIANS_IN_ROUND = "median in the round: baseline → variant"


# the app's short words for a decision (the full ones are in the file's table)
_SHORT_DECISIONS = {
    "keep as the default path": "keep",
    "keep behind a guard or flag": "keep, guarded",
    "keep as a local micro-optimization only": "keep, local",
    "need more evidence": "need evidence",
}


def _narrow_table(rows: list[SummaryRow]) -> list[str]:
    """The summary for a terminal view: variant, verdict, ratio with its interval, and
    the decision; workload, medians, check, class and round stay in the file's table (and
    in the details below)."""
    several = len({r.workload for r in rows}) > 1
    heading = _ci_heading(rows)
    return md_table(
        ["variant", "verdict", f"ratio ({heading})", "decision"],
        [
            [
                r.variant + (f" · {r.workload}" if several else ""),
                (r.verdict_word or "not measured") + ("" if r.trusted else " (untrusted)"),
                _ratio(r, heading),
                _short_decision(r.disposition),
            ]
            for r in rows
        ],
    )


def _ratio(r: SummaryRow, heading: str) -> str:
    if r.ratio is None:
        return "—"
    if r.ci_low is None or r.ci_high is None:
        return f"{fixed(r.ratio)} (no interval)"
    return f"{fixed(r.ratio)} ({ci_label(r, heading)}{fixed(r.ci_low)}–{fixed(r.ci_high)})"


def _short_decision(text: str) -> str:
    for long, short in _SHORT_DECISIONS.items():
        if text.startswith(long):
            return short + text[len(long) :]
    return text


def band_words(band: float, contract_band: float | None) -> str:
    """The band the verdicts rest on, and whether it is the contract's or a wider one."""
    if contract_band is None or abs(band - contract_band) < 1e-12:
        return f"verdicts at {_pct(band)}, the contract's band"
    how = "widened from" if band > contract_band else "narrowed from"
    return (
        f"verdicts at {_pct(band)} ({how} the contract's {_pct(contract_band)} "
        "for the latest round)"
    )


def _pct(x: float) -> str:
    return f"±{x * 100:.3g}%"


def _left_out(counts: dict[str, int]) -> str:
    """Rows the ledger holds but could not read back: the record says so, never a silence
    a reader takes for "none"."""
    parts = [f"{n} {kind} row{'s' if n > 1 else ''}" for kind, n in counts.items()]
    tail = " (the rounds below name their variants by id)" if "variant" in counts else ""
    return f"**Left out:** {md_cell(', '.join(parts))} could not be read{tail}."


def _folded(names: list[str], after_table: bool, shown: int = 8) -> str:
    """Variants never measured nor decided, in one line ("40 more variants not measured
    yet: v02, v03, …")."""
    head = ", ".join(md_cell(n) for n in names[:shown])
    more = ", …" if len(names) > shown else ""
    n = len(names)
    what = f"{n}{' more' if after_table else ''} variant{'s' if n > 1 else ''}"
    return f"{what} not measured yet: {head}{more}"


def _ci_heading(rows: list[SummaryRow]) -> str:
    """The interval column's confidence, from the rows that have an interval."""
    with_ci = [r for r in rows if r.ci_low is not None]
    return ci_heading(with_ci) if with_ci else "CI"


def _times(r: SummaryRow, heading: str) -> str:
    """By how much, with its interval: an undecided estimate says so, and a figure without
    an interval is never shown bare (it would read as a result)."""
    if r.times == "—":
        return "—"
    ci = f"{ci_label(r, heading)}{r.times_ci}" if r.times_ci != "—" else r.times_ci
    if r.verdict_word == m.Verdict.INCONCLUSIVE.value:
        return "undecided" + (f": {r.times} ({ci})" if r.times_ci != "—" else "")
    return f"{r.times} ({ci})"


def legend(x: SessionExport) -> str:
    """How to read a ratio, for the metric's direction."""
    figures = set(x.session.metrics.values())
    metric = md_cell(figures.pop() if len(figures) == 1 else x.session.metric)
    if x.session.direction == "higher":
        return (
            f"ratio = baseline / variant of {metric} (higher is better, so the ratio is "
            "inverted): below 1 means better, as for every metric."
        )
    return f"ratio = variant / baseline of {metric} (lower is better): below 1 means better."
