"""Evidence attached to the session, each row generically: its kind, title and summary.

The hook for richer evidence: `RENDERERS` maps an evidence kind to a function returning
markdown lines for one row; a kind without one gets only its generic row, plus the top
kernels when its summary has them. The profiles of `gpuopt profile` have their own section
(`profile_lines`, from session.profile.record, gathered with the model), right after.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from session.md import fixed, md_cell, md_table, section, words
from session.record.model import SessionExport
from session.record.rows import EvidenceRow

# evidence kind (its stored value) -> markdown lines for one evidence row
RENDERERS: dict[str, Callable[[EvidenceRow], list[str]]] = {}


def evidence_lines(x: SessionExport) -> list[str]:
    lines: list[str] = []
    section(lines, "Evidence")
    if not x.evidence:
        return [*lines, "No evidence attached."]
    lines += md_table(
        ["id", "kind", "hypothesis", "variant", "title", "summary"],
        [[e.id, words(e.kind), e.hypothesis_id, e.variant, e.title, e.description]
         for e in x.evidence],
    )  # fmt: skip
    for e in x.evidence:
        render = RENDERERS.get(e.kind)
        if render is not None:
            lines += ["", *render(e)]
            continue
        tops: list[dict[str, Any]] = e.summary.get("top_kernels") or []
        if tops:
            lines += ["", f"Top kernels of {md_cell(e.id)}:", ""]
            lines += md_table(
                ["kernel", "launches", "time (µs)", "share", "throughput %"],
                [[k.get("name"), k.get("launches"), fixed(k.get("time_us"), 1),
                  "—" if k.get("share") is None else f"{k['share'] * 100:.1f}%",
                  ", ".join(f"{n}={v:g}" for n, v in (k.get("percent") or {}).items())]
                 for k in tops],
            )  # fmt: skip
    return lines


def profile_lines(x: SessionExport) -> list[str]:
    """The profile section gathered with the model (it carries its own heading)."""
    return list(x.profile_lines)
