"""The preflight: six questions about memory and state, a fourteen-item checklist, and the
class of the bottleneck with the evidence for it.

Each question is answered as measured (with the evidence), handed to a concern area, not
applicable (with why), or left unknown; an unknown answer is raised again when a variant is
disposed of. The wording here is gpuopt's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ledger import queries
from session import models as m
from session.edits import write_fields
from session.errors import BadInput
from session.ledger_port import LedgerLike

QUESTIONS: dict[m.PreflightQuestion, str] = {
    m.PreflightQuestion.LIFETIME: (
        "From when to when must each buffer stay alive, and which completed operation shows "
        "that its last reader is done with it?"
    ),
    m.PreflightQuestion.BACKING: (
        "Does the data need one physically contiguous block, a contiguous virtual range, or "
        "can it live in pieces, and how large is the biggest single allocation that succeeds?"
    ),
    m.PreflightQuestion.RESIDENCY: (
        "On which device or memory tier must the data sit now and at the next step, and which "
        "permitted transfer gets it there in time and within the transfer budget?"
    ),
    m.PreflightQuestion.IDENTITY: (
        "Which fields show that cached or reused state still matches its inputs, is still "
        "valid, and may be used by this caller?"
    ),
    m.PreflightQuestion.MUTATION: (
        "How does state that outlives one call grow, change, get versioned or branched, get "
        "rebuilt, and finally become unreachable?"
    ),
    m.PreflightQuestion.SCHEDULE: (
        "Which compute and memory operations are ready, which lie on the critical path, and "
        "which may overlap without running out of memory or stalling progress?"
    ),
}

CHECKLIST: dict[int, str] = {
    1: "The reference output and the tolerance it is checked against are settled.",
    2: "GPU model, framework and version, dtypes, shapes and layouts are written down.",
    3: "Current runtime, number of kernel launches and peak memory are measured.",
    4: "The biggest intermediate buffer is known.",
    5: "Where it matters: the largest overlap of live buffers, and any memory operation that "
    "failed or costs a lot, are known.",
    6: "The kernel or operator boundary crossed most often is known.",
    7: "The operation that dominates the time is known.",
    8: "Whole-buffer writes followed by reads, and memory stalls nothing hides, come first.",
    9: "Cheap transforms are folded into the kernel that produces or consumes their data, "
    "when fusing at that level is right.",
    10: "Every non-trivial rewrite carries its optimization class (C1, C2, C3, C4 or N/A).",
    11: "Every fast path or memory policy has written guard conditions and a fallback.",
    12: "A profile, compiler output, allocation trace or runtime trace shows the change "
    "really took effect.",
    13: "Both an isolated benchmark and an end-to-end benchmark were run.",
    14: "Only changes that improve the target metric are kept.",
}

# Said when a save of the preflight form changes nothing: an untouched "unknown" needs no
# saving (the record lists what is still unknown), which a new user could not tell.
NOTHING_TO_SAVE = (
    "Nothing to save: an answer left unknown is already recorded as unknown, and the "
    "record lists it. Answer a question, or move on (n)."
)

# How an answer was reached, as a front end names it.
KIND_LABELS: dict[m.PreflightAnswerKind, str] = {
    m.PreflightAnswerKind.MEASURED: "measured",
    m.PreflightAnswerKind.HANDED_OFF: "handed off",
    m.PreflightAnswerKind.NOT_APPLICABLE: "does not apply",
    m.PreflightAnswerKind.UNKNOWN: "unknown",
}

BOTTLENECKS: dict[m.BottleneckClass, str] = {
    m.BottleneckClass.LAUNCH_BOUND: "time goes to launching many small kernels or operators",
    m.BottleneckClass.BANDWIDTH_BOUND: "memory traffic near the device's bandwidth limits speed",
    m.BottleneckClass.COMPUTE_BOUND: "arithmetic units are saturated",
    m.BottleneckClass.LATENCY_BOUND: "dependent waits (memory latency, synchronization) "
    "dominate while units sit idle",
    m.BottleneckClass.HOST_BOUND: "the CPU side (Python, data loading, dispatch) keeps the "
    "GPU waiting",
    m.BottleneckClass.CAPACITY_BOUND: "memory capacity or allocatability limits what can run",
    m.BottleneckClass.UNKNOWN: "not classified yet",
}


class PreflightError(BadInput, ValueError):
    """An answer that cannot be recorded, in one line (still a ValueError for the callers
    that catch that)."""


@dataclass
class PreflightView:
    """Everything the preflight holds for one session, question texts included."""

    answers: list[m.PreflightAnswer]
    checklist: list[m.ChecklistItem]
    bottleneck: m.BottleneckClass
    bottleneck_evidence: str
    unknown: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "questions": [
                {
                    "question": a.question.value,
                    "text": QUESTIONS[a.question],
                    "kind": a.kind.value,
                    "answer": a.text,
                    "evidence_id": a.evidence_id,
                    "concern_area": a.concern_area.value if a.concern_area else None,
                    "recorded": a.updated_at.isoformat(),
                }
                for a in self.answers
            ],
            "checklist": [
                {"number": c.number, "item": CHECKLIST[c.number], "done": c.done, "note": c.note}
                for c in self.checklist
            ],
            "bottleneck": self.bottleneck.value,
            "bottleneck_evidence": self.bottleneck_evidence,
            "unknown": self.unknown,
        }


def answers(ledger: LedgerLike, session: m.Session) -> dict[m.PreflightQuestion, m.PreflightAnswer]:
    return {p.question: p for p in ledger.list(m.PreflightAnswer, session_id=session.id)}


def checklist(ledger: LedgerLike, session: m.Session) -> list[m.ChecklistItem]:
    """All fourteen items, those never touched as not done."""
    return checklist_of(queries.checklist_rows(ledger, session.id))


def checklist_of(stored: Sequence[Mapping[str, Any]]) -> list[m.ChecklistItem]:
    """`checklist` of the stored rows (number, done, note), as a view holds them."""
    rows = {r["number"]: r for r in stored}
    return [
        m.ChecklistItem(
            number=n,
            done=bool(rows[n]["done"]) if n in rows else False,
            note=rows[n]["note"] if n in rows else "",
        )
        for n in CHECKLIST
    ]


def checklist_touched(ledger: LedgerLike, session: m.Session) -> int:
    return queries.checklist_touched(ledger, session.id)


def view(ledger: LedgerLike, session: m.Session) -> PreflightView:
    """The preflight of a session: every question (unanswered ones as unknown)."""
    found = answers(ledger, session)
    full = [
        found.get(q)
        or m.PreflightAnswer(session_id=session.id, question=q, updated_at=session.created_at)
        for q in m.PreflightQuestion
    ]
    fresh = ledger.get(m.Session, session.id) or session
    return PreflightView(
        answers=full,
        checklist=checklist(ledger, session),
        bottleneck=fresh.bottleneck,
        bottleneck_evidence=fresh.bottleneck_evidence,
        unknown=[a.question.value for a in full if a.kind is m.PreflightAnswerKind.UNKNOWN],
    )


def set_answer(
    ledger: LedgerLike,
    session: m.Session,
    question: m.PreflightQuestion | str,
    kind: m.PreflightAnswerKind | str,
    text: str = "",
    *,
    evidence_id: str | None = None,
    concern_area: m.ConcernArea | str | None = None,
    read: m.PreflightAnswer | None = None,
) -> m.PreflightAnswer:
    """Record (or replace) the answer to one question; measured evidence must exist.

    `read`: the answer as the caller saw it (None: as stored now). An answer changed
    elsewhere since then, to something else, is not written over: EditConflict says it."""
    if evidence_id:
        ev = ledger.get(m.Evidence, evidence_id)
        if ev is None or ev.session_id != session.id:
            raise PreflightError(f"no evidence {evidence_id} in session {session.id}")
    answer = m.PreflightAnswer(
        session_id=session.id,
        question=m.PreflightQuestion(question),
        kind=m.PreflightAnswerKind(kind),
        text=text,
        evidence_id=evidence_id,
        concern_area=m.ConcernArea(concern_area) if concern_area else None,
    )
    key = (session.id, answer.question.value)
    if read is None:
        read = ledger.get(m.PreflightAnswer, key) or answer
    changes = {f: getattr(answer, f) for f in ("kind", "text", "evidence_id", "concern_area")}
    return write_fields(
        ledger, "preflight answer", read, key, changes, stamp={"updated_at": answer.updated_at}
    )


def set_checklist(
    ledger: LedgerLike, session: m.Session, number: int, done: bool, note: str | None = None
) -> m.ChecklistItem:
    """Mark one checklist item done or not; a note replaces the old one when given."""
    if number not in CHECKLIST:
        raise PreflightError(f"checklist items are numbered 1 to {len(CHECKLIST)}, not {number}")
    old = {c.number: c for c in checklist(ledger, session)}[number]
    item = m.ChecklistItem(number=number, done=done, note=old.note if note is None else note)
    with ledger.write() as db:
        queries.save_checklist_item(db, session.id, item.number, item.done, item.note)
    return item


def set_bottleneck(
    ledger: LedgerLike, session: m.Session, bottleneck: m.BottleneckClass | str, evidence: str
) -> m.Session:
    """Classify the bottleneck; anything but unknown needs the evidence behind it. Set on
    the newest stored session (a rename or contract edit meanwhile stays); a bottleneck
    changed elsewhere since `session` was read refuses it (EditConflict)."""
    cls = m.BottleneckClass(bottleneck)
    if cls is not m.BottleneckClass.UNKNOWN and not evidence.strip():
        raise PreflightError(f"say what shows the workload is {cls.value} (the evidence)")
    fresh = write_fields(
        ledger,
        "session",
        session,
        session.id,
        {"bottleneck": cls, "bottleneck_evidence": evidence},
    )
    session.bottleneck = cls
    session.bottleneck_evidence = evidence
    return fresh
