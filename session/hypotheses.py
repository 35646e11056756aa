"""Hypotheses: written before any edit, changed only with a reason, never rewritten.

Status and confidence changes go through `set_status` / `set_confidence`, each appending a
`HypothesisEvent` (when, from, to, why); the events are only ever inserted. A new hypothesis
brings back the rejected ones that resemble it, with the condition that would reopen them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from session import models as m
from session.edits import write_fields
from session.errors import BadInput, GateRefusal
from session.gates import NEW_HYPOTHESIS, check_one_factor, require
from session.ledger_port import LedgerLike

EDITABLE = (
    "title",
    "symptom",
    "mechanism",
    "preconditions",
    "predicted_effect",
    "predicted_direction",
    "predicted_evidence",
    "falsifier",
    "confounders",
    "cost",
    "confidence_update",
    "reopen_when",
    "concern_areas",
)

FIELD_LABELS = {
    "symptom": "observed symptom",
    "mechanism": "proposed mechanism",
    "preconditions": "required preconditions",
    "predicted_effect": "predicted effect on the target metric",
    "predicted_direction": "predicted direction of the metric",
    "predicted_evidence": "predicted independent evidence",
    "falsifier": "cheapest falsifying experiment",
    "confounders": "confounders and controls",
    "cost": "cost and risk",
    "confidence": "confidence",
    "confidence_update": "observation that would change the confidence",
    "status": "status",
    "reopen_when": "reopening condition",
    "concern_areas": "concern areas",
}

# The fields a hypothesis should carry before a variant tests it.
REQUIRED_FOR_TESTING = ("symptom", "mechanism", "predicted_effect", "falsifier")

RECALLED = (m.HypothesisStatus.REJECTED, m.HypothesisStatus.REOPENABLE)
NEEDS_REOPENING = "a rejected hypothesis needs the condition that would reopen it"


class HypothesisError(BadInput, ValueError):
    """A hypothesis change that cannot be made, in one line (still a ValueError for the
    callers that catch that)."""


EventField = Literal["status", "confidence", "created", "edited"]


def _event(h: m.Hypothesis, field: EventField, old: Any, new: Any, why: str) -> m.HypothesisEvent:
    def text(v: Any) -> str | None:
        if v is None:
            return None
        if isinstance(v, list):
            return ", ".join(str(getattr(x, "value", x)) for x in v)
        return str(getattr(v, "value", v))

    return m.HypothesisEvent(
        hypothesis_id=h.id,
        field=field,
        from_value=text(old),
        to_value=text(new),
        why=why,
    )


def missing_fields(h: m.Hypothesis) -> list[str]:
    return [FIELD_LABELS[f] for f in REQUIRED_FOR_TESTING if not str(getattr(h, f)).strip()]


def similar_rejected(ledger: LedgerLike, h: m.Hypothesis, limit: int = 5) -> list[m.Hypothesis]:
    """Rejected (or reopenable) hypotheses, from any session, that read like this one."""
    text = " ".join(
        [h.title, h.symptom, h.mechanism, h.predicted_effect, h.predicted_evidence, h.falsifier]
    )
    found: list[m.Hypothesis] = []
    for status in RECALLED:
        for other in ledger.search_hypotheses(text, limit=limit, status=status):
            if other.id != h.id:
                found.append(other)
    return found[:limit]


def add_hypothesis(
    ledger: LedgerLike, session: m.Session, **fields: Any
) -> tuple[m.Hypothesis, list[m.Hypothesis]]:
    """Record a new hypothesis; returns it and the similar rejected ones to show the person.

    Concern areas suggested by the recorded facts are added to it (see session.concerns).
    """
    from session.concerns import suggest_for

    why = fields.pop("why", "") or "written before the edit"
    for forbidden in ("session_id", "status"):
        if forbidden in fields:
            raise HypothesisError(f"{forbidden} is set by gpuopt, not by hand")
    h = m.Hypothesis(session_id=session.id, **fields)
    similar = similar_rejected(ledger, h)
    suggestions = suggest_for(ledger, session, h)
    added = [s.area for s in suggestions if s.area not in h.concern_areas]
    if added:
        h.concern_areas = [*h.concern_areas, *added]
    events = [_event(h, "created", None, h.status, why)]
    events[0].at = h.created_at
    if added:
        reasons = "; ".join(f"{s.area.value}: {s.reason}" for s in suggestions if s.area in added)
        events.append(
            _event(
                h,
                "edited",
                [],
                h.concern_areas,
                f"concern areas suggested from the facts ({reasons})",
            )
        )
        events[-1].at = h.created_at
    ledger.put(h, *events)
    return h, similar


def get(ledger: LedgerLike, ref: str, session: m.Session | None = None) -> m.Hypothesis:
    """A hypothesis by id or unique id prefix (within a session when given)."""
    where: dict[str, Any] = {"session_id": session.id} if session else {}
    rows = [h for h in ledger.list(m.Hypothesis, **where) if h.id == ref or h.id.startswith(ref)]
    exact = [h for h in rows if h.id == ref]
    if exact:
        return exact[0]
    if len(rows) == 1:
        return rows[0]
    if not rows:
        raise HypothesisError(f"no hypothesis {ref!r}")
    raise HypothesisError(f"{ref!r} matches several hypotheses: give more characters")


def edit_hypothesis(
    ledger: LedgerLike, h: m.Hypothesis, why: str = "", **fields: Any
) -> m.Hypothesis:
    """Change the text fields of a hypothesis; each change is kept in its history.

    `h` is the version the edit was made from: the fields given land on the newest stored
    version (another writer's other fields stay), and a field someone else changed since
    `h` was read refuses the edit (session.edits.EditConflict), with its stored value."""
    unknown = sorted(set(fields) - set(EDITABLE))
    if "status" in unknown or "confidence" in unknown:
        raise HypothesisError("change status or confidence with its own command and a reason")
    if unknown:
        raise HypothesisError(f"cannot edit {', '.join(unknown)}")
    changes = {name: value for name, value in fields.items() if value is not None}
    edited: list[str] = []

    def history(
        current: m.Hypothesis, updated: m.Hypothesis, changed: list[str]
    ) -> list[m.HypothesisEvent]:
        edited.extend(changed)
        events = []
        for name in changed:
            label = FIELD_LABELS.get(name, name)
            note = f"{label}: {why}" if why.strip() else f"{label} edited"
            events.append(
                _event(current, "edited", getattr(current, name), getattr(updated, name), note)
            )
        return events

    with ledger.write():  # the concern areas it suggests land with the edit
        updated = write_fields(ledger, "hypothesis", h, h.id, changes, history)
        if edited and "concern_areas" not in changes:
            from session.concerns import record_suggestions

            session = ledger.get(m.Session, updated.session_id)
            if session is not None:
                updated, _ = record_suggestions(ledger, session, updated)
    return updated


def set_status(
    ledger: LedgerLike,
    h: m.Hypothesis,
    status: m.HypothesisStatus | str,
    why: str,
    *,
    reopen_when: str | None = None,
) -> m.Hypothesis:
    """Move a hypothesis to a new status, with the reason; a rejection keeps a reopening
    condition (the one given here, or the one it already has). Written onto the newest
    stored version; a status changed elsewhere since `h` was read refuses it."""
    if not why.strip():
        raise HypothesisError("say why the status changes")
    new = m.HypothesisStatus(status)
    changes: dict[str, Any] = {"status": new}
    if reopen_when is not None:
        changes["reopen_when"] = reopen_when

    def history(
        current: m.Hypothesis, updated: m.Hypothesis, changed: list[str]
    ) -> list[m.HypothesisEvent]:
        events = []
        if "reopen_when" in changed:
            label = FIELD_LABELS["reopen_when"]
            events.append(
                _event(current, "edited", current.reopen_when, updated.reopen_when,
                       f"{label}: {why}")
            )  # fmt: skip
        if "status" in changed:
            events.append(_event(current, "status", current.status, updated.status, why))
        return events

    with ledger.write():
        current = ledger.get(m.Hypothesis, h.id) or h
        reopen = current.reopen_when if reopen_when is None else reopen_when
        if new is m.HypothesisStatus.REJECTED and not reopen.strip():
            raise HypothesisError(NEEDS_REOPENING)
        return write_fields(ledger, "hypothesis", h, h.id, changes, history)


def set_confidence(
    ledger: LedgerLike, h: m.Hypothesis, confidence: m.Confidence | str, why: str
) -> m.Hypothesis:
    """Change the confidence of a hypothesis, with the observation that changed it
    (onto the newest stored version; refused if changed elsewhere since `h` was read)."""
    if not why.strip():
        raise HypothesisError("say which observation changes the confidence")
    new = m.Confidence(confidence)

    def history(
        current: m.Hypothesis, updated: m.Hypothesis, changed: list[str]
    ) -> list[m.HypothesisEvent]:
        return [_event(current, "confidence", current.confidence, updated.confidence, why)]

    return write_fields(ledger, "hypothesis", h, h.id, {"confidence": new}, history)


def history(ledger: LedgerLike, h: m.Hypothesis) -> list[m.HypothesisEvent]:
    return list(ledger.list(m.HypothesisEvent, hypothesis_id=h.id, order_by="at, rowid"))


def variant_to_link(ledger: LedgerLike, session: m.Session, ref: str) -> m.Variant:
    """The variant `ref` of the session a new hypothesis will be linked to; GateRefusal,
    before anything is written, when it already tests another hypothesis."""
    variant = ledger.variant(session.id, ref)
    require(check_one_factor(variant, NEW_HYPOTHESIS))
    return variant


def link_variant(ledger: LedgerLike, variant: m.Variant, h: m.Hypothesis) -> m.Variant:
    """Attach a variant to the hypothesis it tests; a variant tests one factor only."""
    if variant.session_id != h.session_id:
        raise GateRefusal("the variant and the hypothesis belong to different sessions")
    require(check_one_factor(variant, h.id))
    if variant.hypothesis_id == h.id:
        return variant
    variant.hypothesis_id = h.id
    ledger.put(variant)
    return variant


def variants_of(ledger: LedgerLike, h: m.Hypothesis) -> list[m.Variant]:
    return list(ledger.list(m.Variant, hypothesis_id=h.id))


def hypothesis_for_new_variant(
    hypotheses: Sequence[m.Hypothesis], variants: Sequence[m.Variant]
) -> m.Hypothesis | None:
    """The hypothesis a new variant tests unless the person picks another: the oldest one,
    not rejected, that no variant tests yet (one idea per variant, in the order they were
    written), else the newest not rejected."""
    open_ = [h for h in hypotheses if h.status is not m.HypothesisStatus.REJECTED]
    tested = {v.hypothesis_id for v in variants}
    return next((h for h in open_ if h.id not in tested), open_[-1] if open_ else None)


_WORD = re.compile(r"[a-z0-9]{3,}")


def hypothesis_for_ref(
    hypotheses: Sequence[m.Hypothesis], variants: Sequence[m.Variant], ref_words: str
) -> m.Hypothesis | None:
    """The hypothesis a variant from a ref tests unless the person picks another: the open
    one whose title shares the most words with the ref's name and last commit subject
    (`ref_words`); with no word shared, `hypothesis_for_new_variant`."""
    words = set(_WORD.findall(ref_words.lower()))
    open_ = [h for h in hypotheses if h.status is not m.HypothesisStatus.REJECTED]
    scored = [
        (len(words & set(_WORD.findall(h.title.lower()))), -i, h) for i, h in enumerate(open_)
    ]
    best = max(scored, default=None, key=lambda x: (x[0], x[1]))
    if best is None or best[0] == 0:
        return hypothesis_for_new_variant(hypotheses, variants)
    return best[2]
