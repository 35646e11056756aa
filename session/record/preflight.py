"""The preflight: the bottleneck class, the questions and their answers, the checklist."""

from __future__ import annotations

from session.md import md_cell, md_table, section, words
from session.record.model import SessionExport


def preflight_lines(x: SessionExport) -> list[str]:
    s = x.session
    lines: list[str] = []
    section(lines, "Preflight")
    lines += md_table(
        ["field", "value"],
        [["bottleneck", words(s.bottleneck)], ["evidence", s.bottleneck_evidence]],
    )
    lines.append("")
    lines += md_table(
        ["question", "answer", "detail", "evidence", "concern area"],
        [[p.question, words(p.kind), p.text, p.evidence_id,
          words(p.concern_area) if p.concern_area else "—"]
         for p in x.preflight],
    )  # fmt: skip
    unknown = [p.question for p in x.preflight if p.kind == "unknown"]
    if unknown:
        lines += ["", f"Still unknown: {md_cell(', '.join(unknown))}."]
    lines += ["", "Checklist:", ""]
    lines += md_table(
        ["#", "item", "done", "note"],
        [[c.number, c.item, "✓" if c.done else "·", c.note] for c in x.checklist],
    )  # fmt: skip
    return lines
