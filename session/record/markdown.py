"""The markdown exporter: the summary first, then the hypotheses, then the details, one
module per section over the one model."""

from __future__ import annotations

from typing import Any

from session.md import fitted, md_table, section, words
from session.record.baselines import baseline_lines
from session.record.checks import audits_lines, correctness_lines
from session.record.contract import contract_lines
from session.record.decisions import dispositions_lines, residuals_lines
from session.record.evidence import evidence_lines, profile_lines
from session.record.hypotheses import hypotheses_lines, hypothesis_details
from session.record.model import SessionExport
from session.record.plan_md import plan_lines
from session.record.preflight import preflight_lines
from session.record.rounds import rounds_lines
from session.record.summary import summary_lines

SECTIONS = (
    summary_lines,
    hypotheses_lines,
    lambda x: ["---", "", "# Details"],
    contract_lines,
    baseline_lines,
    preflight_lines,
    rounds_lines,
    correctness_lines,
    audits_lines,
    residuals_lines,
    dispositions_lines,
    evidence_lines,
    profile_lines,
    lambda x: _variants(x),
    lambda x: _hypotheses_in_full(x),
    plan_lines,
)


def to_markdown(data: SessionExport | dict[str, Any], fit: int | None = None) -> str:
    """The record; `fit`: laid out for a terminal view that many columns wide (the
    summary's narrow table, every wider table one line per row), None for the file."""
    x = data if isinstance(data, SessionExport) else SessionExport.model_validate(data)
    with fitted(fit):
        parts = ["\n".join(part(x)).strip("\n") for part in SECTIONS]
    return "\n\n".join(p for p in parts if p) + "\n"


def _variants(x: SessionExport) -> list[str]:
    lines: list[str] = []
    section(lines, "Variants")
    if not x.variants:
        return [*lines, "No variants recorded."]
    lines += md_table(
        ["name", "kind", "hypothesis", "snapshot", "ref", "source", "diff stat"],
        [[v.name, words(v.kind), v.hypothesis_id, v.snapshot.commit[:12], v.snapshot.ref,
          v.source, v.diff_stat] for v in x.variants],
    )  # fmt: skip
    return lines


def _hypotheses_in_full(x: SessionExport) -> list[str]:
    if not x.hypotheses:
        return []
    lines: list[str] = []
    section(lines, "Hypotheses in full")
    return lines + hypothesis_details(x)
