"""The hypotheses: status, the confidence change the evidence made, what would falsify them;
then each one in full with its history."""

from __future__ import annotations

import re

from session.concerns import LABELS
from session.md import md_cell, md_table, section, words
from session.record.model import SessionExport
from session.record.rows import HypothesisRow
from session.verdicts import bytes_text


def _confidence_change(x: SessionExport, h: HypothesisRow) -> str:
    moves = [
        f"{r.confidence_from} → {r.confidence_to}" + (f" (round {r.round})" if r.round else "")
        for r in x.residuals
        if r.hypothesis_id == h.id
        and r.confidence_from
        and r.confidence_to not in (None, r.confidence_from)
    ]
    if not moves:
        moves = [
            f"{e.from_value} → {e.to_value}"
            for e in h.history
            if e.field == "confidence" and e.from_value
        ]
    return "; ".join(dict.fromkeys(moves)) or f"{h.confidence} (unchanged)"


def hypotheses_lines(x: SessionExport) -> list[str]:
    lines: list[str] = []
    section(lines, "Hypotheses")
    if not x.hypotheses:
        return [*lines, "No hypotheses recorded."]
    # "status change suggested", not "the evidence suggests: no change": beside a status
    # of supported, "no change" read as the evidence saying nothing had moved
    lines += md_table(
        ["id", "title", "status", "status change suggested", "confidence", "variants",
         "cheapest falsifier"],
        [
            [h.id, h.title, words(h.status), h.suggested_status or "none",
             _confidence_change(x, h), ", ".join(h.variants), h.falsifier]
            for h in x.hypotheses
        ],
    )  # fmt: skip
    return lines


def hypothesis_details(x: SessionExport) -> list[str]:
    lines: list[str] = []
    for h in x.hypotheses:
        section(lines, f"Hypothesis {md_cell(h.id)}: {md_cell(h.title)}", 3)
        lines += md_table(
            ["field", "value"],
            [
                ["observed symptom", h.symptom],
                ["proposed mechanism", h.mechanism],
                ["required preconditions", h.preconditions],
                ["predicted effect on the target metric", h.predicted_effect],
                ["predicted direction", words(h.predicted_direction)],
                ["predicted independent evidence", h.predicted_evidence],
                ["cheapest falsifying experiment", h.falsifier],
                ["confounders", h.confounders],
                ["cost and risk", h.cost],
                ["confidence", h.confidence],
                ["what would change the confidence", h.confidence_update],
                ["status", words(h.status)],
                ["reopen when", h.reopen_when],
                ["concern areas", ", ".join(words(a) for a in h.concern_areas)],
            ],
        )
        if h.history:
            lines += ["", "History:", ""]
            lines += md_table(
                ["when", "what", "from", "to", "why"],
                [[e.at, e.field, _listed(e.from_value), _listed(e.to_value),
                  stored_words(e.why)] for e in h.history],
            )  # fmt: skip
    return lines


def _listed(value: str | None) -> str:
    """A stored value (or a comma-separated list of them, such as concern areas) in words."""
    if not value:
        return "—"
    return ", ".join(_AREAS.get(x.strip()) or words(x.strip()) for x in value.split(","))


# Concern areas in session.concerns' labels; byte counts as sizes, with the change exact.
_AREAS = {a.value: label for a, label in LABELS.items()}
_AREA = re.compile(r"\b(" + "|".join(map(re.escape, _AREAS)) + r")\b")
_BYTES = re.compile(r"\b(\d+) -> (\d+) bytes\b")


def _sizes(hit: re.Match[str]) -> str:
    before, after = int(hit.group(1)), int(hit.group(2))
    delta = after - before
    sign = "+" if delta > 0 else "−"
    return f"{bytes_text(before)} → {bytes_text(after)} ({sign}{bytes_text(abs(delta))})"


def stored_words(text: str | None) -> str:
    """History text written with stored values in it (`fusion_and_layout: …`, `1049600 ->
    1049088 bytes`) in the record's words."""
    if not text:
        return "—"
    return _BYTES.sub(_sizes, _AREA.sub(lambda hit: _AREAS[hit.group(1)], text))
