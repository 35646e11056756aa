"""Dispositions: what becomes of a variant, recorded only when its gates open.

`dispose` checks every gate of `session.gates.check_disposition` and raises `GateRefusal`
with all unmet conditions at once. Preflight questions still unknown do not block; they are
raised again (`preflight_warnings`) and kept on the disposition (`open_questions`).
A keep or a reject offers its hypothesis the matching status (`status_suggestion`); only
the person's yes writes it (`apply_status_suggestion`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from session import models as m
from session.gates import (
    GateRefusal,
    check_disposition,
    latest_comparisons_in,
    latest_correctness_in,
    open_preflight_questions,
    require,
)
from session.hypotheses import set_confidence, set_status
from session.view import SessionView, load_rows

# The optimization classes in words (models.OptimizationClass, as DESIGN.md defines them).
CLASS_DESCRIPTIONS: dict[m.OptimizationClass, str] = {
    m.OptimizationClass.C1: "bit-identical results",
    m.OptimizationClass.C2: "same precision, arithmetic reordered or re-associated",
    m.OptimizationClass.C3: "changed precision or approximate math (needs your acceptance)",
    m.OptimizationClass.C4: "changed semantics at boundaries, special values, determinism "
    "or aliasing (needs your acceptance and a guard)",
    m.OptimizationClass.NA: "no floating-point effect",
}

DESCRIPTIONS: dict[m.DispositionChoice, str] = {
    m.DispositionChoice.KEEP_DEFAULT: "keep as the default path",
    m.DispositionChoice.KEEP_GUARDED: "keep behind a guard or flag",
    m.DispositionChoice.KEEP_LOCAL: "keep as a local micro-optimization only",
    m.DispositionChoice.REJECT: "reject",
    m.DispositionChoice.NEED_EVIDENCE: "need more evidence",
}

# What a confirmed residual read says of the variant's hypothesis (session.residuals reads
# the class; the status it suggests is the disposition's rule, so it lives here). What the
# status of the hypothesis would usually become; the person decides.
SUGGESTED_STATUS: dict[m.ResidualClass, m.HypothesisStatus] = {
    m.ResidualClass.AS_PREDICTED: m.HypothesisStatus.SUPPORTED,
    m.ResidualClass.NOTHING_MOVED: m.HypothesisStatus.WEAKENED,
    m.ResidualClass.MECHANISM_ONLY: m.HypothesisStatus.WEAKENED,
    m.ResidualClass.METRIC_ONLY: m.HypothesisStatus.WEAKENED,
    m.ResidualClass.OPPOSITE_SIGN: m.HypothesisStatus.WEAKENED,
}

__all__ = [
    "CLASS_DESCRIPTIONS",
    "DESCRIPTIONS",
    "GateRefusal",
    "StatusSuggestion",
    "apply_status_suggestion",
    "dispose",
    "preflight_warnings",
    "status_suggestion",
    "status_suggestion_in",
]


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


# ---------------------------------------------------------------------------- hypothesis status

_UP = {m.Confidence.LOW: m.Confidence.MEDIUM, m.Confidence.MEDIUM: m.Confidence.HIGH}
_DOWN = {m.Confidence.HIGH: m.Confidence.MEDIUM, m.Confidence.MEDIUM: m.Confidence.LOW}
# a rejected variant whose residual says the mechanism itself failed rejects the hypothesis
_MECHANISM_FAILED = (m.ResidualClass.NOTHING_MOVED, m.ResidualClass.OPPOSITE_SIGN)


@dataclass(frozen=True)
class StatusSuggestion:
    """The status change the evidence suggests for a variant's hypothesis, once it is kept
    or rejected. Only offered: `apply_status_suggestion` writes it, on the person's yes."""

    hypothesis: m.Hypothesis
    status: m.HypothesisStatus
    confidence: m.Confidence
    why: str
    reopen_when: str = ""

    @property
    def falsifier(self) -> str:
        return self.hypothesis.falsifier.strip()

    @property
    def text(self) -> str:
        h = self.hypothesis
        out = f"hypothesis {h.id} ({h.title}): {h.status.value} → {self.status.value}"
        if self.confidence is not h.confidence:
            out += f", confidence {h.confidence.value} → {self.confidence.value}"
        out += f" ({self.why})"
        nxt = self.falsifier or "none written: write the next cheapest falsifier"
        return out + f"; next falsifier: {nxt}"

    def command(self, session_id: str) -> list[str]:
        """The `gpuopt hypothesis status` words that apply it."""
        words = ["gpuopt", "hypothesis", "status", session_id, self.hypothesis.id,
                 "--status", self.status.value, "--confidence", self.confidence.value,
                 "--why", self.why]  # fmt: skip
        if self.status is m.HypothesisStatus.REJECTED and self.reopen_when:
            words += ["--reopen-when", self.reopen_when]
        return words


def status_suggestion(ledger: Any, d: m.Disposition) -> StatusSuggestion | None:
    """`status_suggestion_in` of the ledger's rows of the disposition's session."""
    return status_suggestion_in(load_rows(ledger, d.session_id), d)


def status_suggestion_in(view: SessionView, d: m.Disposition) -> StatusSuggestion | None:
    """What a keep or a reject says of the variant's hypothesis. The residual read for the
    variant decides, as the method says (`SUGGESTED_STATUS`), except
    for a hypothesis that predicted no direction (a control) and saw nothing move: it is
    supported only where its latest round said SAME, and offered nothing after an
    INCONCLUSIVE one (its falsifier is any other verdict). A rejected variant whose check
    failed weakens it, whatever its speed; a rejected variant whose confirmed residual
    shows the mechanism did not move, or moved the wrong way, rejects it. With no
    residual: kept → supported, rejected → weakened. Supported raises the confidence a
    step, weakened lowers it, rejected makes it low. None when there is no hypothesis, the
    choice waits for evidence, or the hypothesis already says so."""
    variant = view.variant(d.variant_id)
    if variant is None or not variant.hypothesis_id:
        return None
    h = view.hypothesis(variant.hypothesis_id)
    if h is None or d.choice is m.DispositionChoice.NEED_EVIDENCE:
        return None
    rejected = d.choice is m.DispositionChoice.REJECT
    residuals = sorted(
        (r for r in view.residuals if r.variant_id == variant.id), key=lambda r: r.created_at
    )
    read = residuals[-1] if residuals else None
    cls = (read.confirmed or read.suggested) if read else None
    control = h.predicted_direction is None and cls is m.ResidualClass.NOTHING_MOVED
    if control and not _check_failed(view, variant):
        # a control that saw nothing move: supported only where its round said SAME; an
        # INCONCLUSIVE round is no evidence either way (and fires "a verdict other than SAME")
        seen = _latest_verdicts(view, variant)
        if not seen or any(v is not m.Verdict.SAME for v in seen):
            return None
        status = m.HypothesisStatus.SUPPORTED
    elif rejected and read is not None and read.confirmed in _MECHANISM_FAILED:
        status = m.HypothesisStatus.REJECTED
    elif rejected and _check_failed(view, variant):
        status = m.HypothesisStatus.WEAKENED  # it may be fast, but not as a correct change
    elif cls is None:
        status = m.HypothesisStatus.WEAKENED if rejected else m.HypothesisStatus.SUPPORTED
    else:
        status = SUGGESTED_STATUS[cls]
    confidence = {
        m.HypothesisStatus.SUPPORTED: _UP.get(h.confidence, h.confidence),
        m.HypothesisStatus.WEAKENED: _DOWN.get(h.confidence, h.confidence),
    }.get(status, m.Confidence.LOW)
    why = f"{variant.name}: {DESCRIPTIONS[d.choice]}"
    if d.reason.strip():
        why += f" ({d.reason.strip()})"
    if cls is not None:
        why += f"; residual: {cls.value.replace('_', ' ')}"
    if status is h.status and confidence is h.confidence:
        return None
    reopen = d.reopen_when.strip() or h.reopen_when.strip()
    return StatusSuggestion(h, status, confidence, why, reopen)


def _latest_verdicts(view: SessionView, variant: m.Variant) -> list[m.Verdict]:
    """The speed verdicts of the variant in the latest round that measured it."""
    _, rows = latest_comparisons_in(view, variant)
    return [c.verdict for c in rows]


def _check_failed(view: SessionView, variant: m.Variant) -> bool:
    """Whether the latest check of the variant on any workload failed."""
    return any(not c.passed for c in latest_correctness_in(view, variant))


def apply_status_suggestion(ledger: Any, s: StatusSuggestion) -> m.Hypothesis:
    """Write a suggestion the person accepted: its confidence, then its status."""

    h = set_confidence(ledger, s.hypothesis, s.confidence, s.why)
    return set_status(ledger, h, s.status, s.why, reopen_when=s.reopen_when or None)
