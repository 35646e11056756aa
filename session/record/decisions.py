"""Residuals and dispositions, each labelled with the round it rests on."""

from __future__ import annotations

from session.md import join, md_cell, md_table, round_label, section, words, yes
from session.record.model import SessionExport
from session.record.rows import ResidualRow


def residuals_lines(x: SessionExport) -> list[str]:
    lines: list[str] = []
    section(lines, "Residuals")
    if not x.residuals:
        return [*lines, "No residuals read yet."]
    lines += md_table(
        ["round", "variant", "hypothesis", "suggested", "confirmed", "confidence", "reading"],
        [
            [round_label(r.round), r.variant, r.hypothesis_id,
             words(r.suggested), words(r.confirmed) if r.confirmed else "not yet",
             _confidence(r), r.note or r.description]
            for r in x.residuals
        ],
    )  # fmt: skip
    return lines


def dispositions_lines(x: SessionExport) -> list[str]:
    lines: list[str] = []
    section(lines, "Dispositions")
    if not x.dispositions:
        return [*lines, "No dispositions recorded."]
    for d in x.dispositions:
        section(lines, f"{md_cell(d.variant)}: {md_cell(d.choice_words or words(d.choice))}", 3)
        lines += md_table(
            ["field", "value"],
            [
                ["rests on", round_label(d.round)],
                ["optimization class", d.optimization_class],
                ["semantics change accepted", yes(d.accepted_semantics)],
                ["guard conditions", join(d.guards)],
                ["fallback", d.fallback],
                ["failure cases", join(d.failure_cases)],
                ["remaining bottlenecks", join(d.remaining_bottlenecks)],
                ["reason", d.reason],
                ["reopen when", d.reopen_when],
                ["preflight still unknown", join(d.open_questions, ", ")],
                ["decided", d.created_at],
            ],
        )
    return lines


def _confidence(r: ResidualRow) -> str:
    before, after = r.confidence_from, r.confidence_to
    if not before:
        return "—"
    return f"{before}, unchanged" if after in (None, before) else f"{before} → {after}"
