"""The form that attaches evidence to a hypothesis (or the session): a note, a file, an
Nsight Compute CSV or a torch.profiler table, through session.evidence."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from session import models as m
from session.api import add_file, add_note, import_ncu_csv, import_torch_profile
from session.read_model import SessionView
from tui.display import shown
from tui.widgets.form import Field

KINDS: list[tuple[str, str]] = [
    ("a note (text below)", m.EvidenceKind.NOTE.value),
    ("a file (path below)", m.EvidenceKind.FILE.value),
    ("an Nsight Compute CSV (path below)", m.EvidenceKind.NCU_CSV.value),
    ("a torch.profiler table (path below)", m.EvidenceKind.TORCH_PROFILE.value),
]


def evidence_form(
    ledger: Any, view: SessionView, hypothesis: m.Hypothesis | None
) -> tuple[str, list[Field], Callable[[dict[str, Any]], m.Evidence], str]:
    """Title, fields, submit and note of the form; submit raises the session's own
    EvidenceError (shown under the form) for a file it cannot read."""
    hyps = [(shown(h.title, 40, brief=True), h.id) for h in view.hypotheses]
    fields = [
        Field("kind", "What it is", m.EvidenceKind.NOTE.value, choices=KINDS),
        Field(
            "hypothesis_id",
            "Hypothesis it supports (blank: the session)",
            hypothesis.id if hypothesis else "",
            choices=hyps,
            allow_blank=True,
        ),
        Field("title", "Title", placeholder="optional: a few words"),
        Field("text", "Note, or the file's path", placeholder="e.g. ncu.csv or what you saw"),
    ]

    def submit(vals: dict[str, Any]) -> m.Evidence:
        kind = m.EvidenceKind(vals["kind"] or m.EvidenceKind.NOTE.value)
        kw: dict[str, Any] = {
            "title": vals["title"],
            "hypothesis_id": vals["hypothesis_id"] or None,
        }
        text = vals["text"].strip()
        if kind is m.EvidenceKind.NOTE:
            return add_note(ledger, view.session, text, **kw)
        if not text:
            raise ValueError("give the file's path")
        if kind is m.EvidenceKind.NCU_CSV:
            return import_ncu_csv(ledger, view.session, text, **kw)
        if kind is m.EvidenceKind.TORCH_PROFILE:
            return import_torch_profile(ledger, view.session, text, **kw)
        return add_file(ledger, view.session, text, **kw)

    note = "A profile is summarized (top kernels or operators); the ledger keeps the "
    note += "summary, the path and the file's hash."
    return "Add evidence", fields, submit, note
