"""Each round: its baseline check and trust, and per comparison the verdict a reviewer
sees (session.verdicts), the ratio in × faster/slower, the absolute medians of both arms."""

from __future__ import annotations

import json

from session.md import figure, fixed, join, md_cell, md_code, md_table, section, words
from session.record.model import RoundRow, SessionExport
from session.record.summary import legend
from session.residuals import ROUND_SUMMARY_FIELDS
from session.verdicts import ci_heading, ci_label, times_text

_REPRODUCED = {True: "reproduced", False: "NOT reproduced", None: "not judged"}

_SUMMARY_LABELS = {
    "baseline_id": "Baseline ID",
    "reset_procedure": "reset / restore",
    "hypotheses": "hypotheses",
    "variants": "variants",
    "baseline_check": "per-variant baseline check",
    "results": "results",
    "confidence_updates": "confidence updates",
    "residuals": "residuals",
    "disposition": "disposition",
    "next": "next profile or reopening condition",
}


def rounds_lines(x: SessionExport) -> list[str]:
    lines: list[str] = []
    section(lines, "Rounds")
    if not x.rounds:
        return [*lines, "No rounds run yet."]

    lines += [legend(x), ""]
    units = x.summary.units
    for r in x.rounds:
        lines += _round(r, units)
    return lines


def _round(r: RoundRow, units: dict[str, str]) -> list[str]:
    lines: list[str] = []
    trust = "" if r.trusted else f", untrusted: {md_cell(r.untrusted_why)}"
    section(lines, f"Round {r.number} ({md_cell(words(r.status))}, {r.blocks} blocks{trust})", 3)
    check = "—" if r.baseline_check is None else f"{r.baseline_check:.3f}"
    judged = _REPRODUCED[r.baseline_reproduced]
    if (r.summary or {}).get("baseline_reference_unreliable"):
        judged = f"{judged}: it drifted when recorded, so its absolute figures are unreliable"
    lines.append(
        f"Baseline {md_cell(r.baseline_id)}, checked in the round at {md_cell(check)} of its "
        f"reference ({judged}); seed {md_cell(r.seed)}, "
        f"threshold ±{r.threshold * 100:.1f}%."
    )
    lines.append("")
    heading = ci_heading(r.comparisons)
    lines += md_table(
        ["round", "variant", "workload", "scope", "verdict", f"ratio ({heading})",
         "× faster",
         "median baseline → variant", "n", "trust"],
        [
            [f"round {r.number}", c.variant, c.workload, words(c.scope) if c.scope else "—",
             c.shown + (f" (~{c.blocks_needed} more blocks)" if c.blocks_needed else ""),
             f"{fixed(c.ratio)} [{ci_label(c, heading)}{fixed(c.ci_low)}, {fixed(c.ci_high)}]",
             "—" if c.verdict == "BROKEN" else times_text(c.ratio),
             f"{figure(c.baseline_median)} → {figure(c.variant_median, units.get(c.workload, ''))}",
             c.n, _trust_text(c.trust, c.untrusted_runs, c.failed_runs)]
            for c in r.comparisons
        ],
    )  # fmt: skip
    engine = r.summary or {}
    elapsed = engine.get("elapsed_s")
    facts: list[list[object]] = [
        ["stopped because", engine.get("stop_reason")],
        ["elapsed", f"{elapsed:g} s" if isinstance(elapsed, (int, float)) else None],
        ["skipped blocks", join(engine.get("skipped_blocks"), ", ")],
        ["worker options", join([f"{k}: {json.dumps(v, sort_keys=True)}"
                                 for k, v in (engine.get("worker_options") or {}).items()])],
        ["notes", join(engine.get("notes"))],
        ["error", engine.get("error")],
    ]  # fmt: skip
    facts = [f for f in facts if f[1]]
    if facts:
        lines.append("")
        lines += md_table(["round fact", "value"], facts)
    for c in r.comparisons:
        if c.error or c.note:
            who = f"{md_cell(c.variant)}/{md_cell(c.workload)}"
            lines += ["", f"{md_cell(c.speed_verdict)} in round {r.number}: {who}, "
                      f"{md_cell(c.note)}", ""]  # fmt: skip
            if c.error:
                lines += md_code(c.error.splitlines())
    summary = r.search_round
    if summary is not None:
        lines += ["", f"Round {r.number} summary:", ""]
        lines += md_table(
            ["field", "value"],
            [[label, getattr(summary, key, "")] for key, label in _SUMMARY_LABELS.items()
             if key in ROUND_SUMMARY_FIELDS],
        )  # fmt: skip
    return lines


def _trust_text(counts: dict[str, int], untrusted: int, failed: int) -> str:
    parts = [f"{v} {k}" for k, v in sorted(counts.items())]
    if untrusted:
        parts.append(f"{untrusted} quarantined")
    if failed:
        parts.append(f"{failed} failed")
    return ", ".join(parts) or "—"
