"""Dispositions: what becomes of a variant, recorded only when its gates open.

`dispose` checks every gate of `session.gates.check_disposition` and raises `GateRefusal`
with all unmet conditions at once. Preflight questions still unknown do not block; they are
raised again (`preflight_warnings`) and kept on the disposition (`open_questions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from session import models as m
from session.gates import GateRefusal, check_disposition, open_preflight_questions, require

DESCRIPTIONS: dict[m.DispositionChoice, str] = {
    m.DispositionChoice.KEEP_DEFAULT: "keep as the default path",
    m.DispositionChoice.KEEP_GUARDED: "keep behind a guard or flag",
    m.DispositionChoice.KEEP_LOCAL: "keep as a local micro-optimization only",
    m.DispositionChoice.REJECT: "reject",
    m.DispositionChoice.NEED_EVIDENCE: "need more evidence",
}

__all__ = ["DESCRIPTIONS", "GateRefusal", "dispose", "preflight_warnings"]


def _clean(items: Sequence[str] | None) -> list[str]:
    return [x for x in (items or []) if x and x.strip()]


def preflight_warnings(ledger: Any, session: m.Session) -> list[str]:
    """The preflight questions still unknown, as lines to show at disposition time."""
    unknown = open_preflight_questions(ledger, session)
    if not unknown:
        return []
    label = "question" if len(unknown) == 1 else "questions"
    return [f"preflight {label} still unknown: {', '.join(unknown)}"]


def dispose(
    ledger: Any,
    session: m.Session,
    variant: m.Variant | str,
    choice: m.DispositionChoice | str,
    *,
    optimization_class: m.OptimizationClass | str | None = None,
    accepted_semantics: bool = False,
    guards: Sequence[str] | None = None,
    fallback: str = "",
    failure_cases: Sequence[str] | None = None,
    remaining_bottlenecks: Sequence[str] | None = None,
    reason: str = "",
    reopen_when: str = "",
    id: str | None = None,
    created_at: Any = None,
) -> m.Disposition:
    """Record a disposition for a variant, or raise GateRefusal with every unmet condition."""
    if isinstance(variant, str):
        variant = ledger.variant(session.id, variant)
    assert isinstance(variant, m.Variant)
    if variant.session_id != session.id:
        raise GateRefusal(f"variant {variant.name} belongs to another session")
    fields: dict[str, Any] = {
        "session_id": session.id,
        "variant_id": variant.id,
        "choice": m.DispositionChoice(choice),
        "optimization_class": m.OptimizationClass(optimization_class)
        if optimization_class
        else None,
        "accepted_semantics": accepted_semantics,
        "guards": _clean(guards),
        "fallback": fallback,
        "failure_cases": _clean(failure_cases),
        "remaining_bottlenecks": _clean(remaining_bottlenecks),
        "reason": reason,
        "reopen_when": reopen_when,
        "open_questions": open_preflight_questions(ledger, session),
    }
    if id:
        fields["id"] = id
    if created_at is not None:
        fields["created_at"] = created_at
    d = m.Disposition(**fields)
    require(check_disposition(ledger, session, d))
    ledger.put(d)
    return d


def latest(ledger: Any, variant: m.Variant) -> m.Disposition | None:
    rows = ledger.list(m.Disposition, variant_id=variant.id, order_by="created_at DESC, rowid DESC")
    return rows[0] if rows else None
