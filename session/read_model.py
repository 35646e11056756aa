"""The read model of one session: everything a front end shows of it, read in one go.

`load_view` reads a session and its rows into a typed `SessionView`; the app draws it, and
the few questions a screen asks about what it shows (the residual the round suggests, what
each disposition still lacks) are answered here by the method's own functions. Every count
or listing a front end needs beyond the models is read here too, so no SQL lives in `tui/`.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from session import check_words
from session import models as m
from session.gates import check_disposition
from session.residuals import confirm_residual as confirm_residual_class
from session.residuals import record_residual, suggest_residual
from session.steps import step_states

STEP_ORDER: tuple[m.StepName, ...] = tuple(m.StepName)


@dataclass
class SessionView:
    session: m.Session
    baselines: list[m.Baseline] = field(default_factory=list)
    hypotheses: list[m.Hypothesis] = field(default_factory=list)
    variants: list[m.Variant] = field(default_factory=list)
    rounds: list[m.Round] = field(default_factory=list)
    comparisons: dict[str, list[m.Comparison]] = field(default_factory=dict)  # round id -> rows
    correctness: list[m.CorrectnessResult] = field(default_factory=list)
    audits: list[m.Audit] = field(default_factory=list)
    residuals: list[m.Residual] = field(default_factory=list)
    dispositions: list[m.Disposition] = field(default_factory=list)
    preflight: list[m.PreflightAnswer] = field(default_factory=list)
    steps: list[m.StepStatus] = field(default_factory=list)
    baseline_runs: int = 0
    suggestions: dict[str, tuple[m.ResidualClass, str]] = field(default_factory=dict)
    # rows of this session that do not read back as their model (ledger.store.UnreadableRow):
    # named on the screen, left out of every list above
    unreadable: list[Any] = field(default_factory=list)
    # workload -> its roofline floor, from the baseline's newest profile (session.check_words)
    floors: dict[str, check_words.Floor] = field(default_factory=dict)
    # the session as read, with its row version: a save writes only over this version
    session_read: Any = None

    @property
    def baseline(self) -> m.Baseline | None:
        return self.baselines[-1] if self.baselines else None

    @property
    def last_round(self) -> m.Round | None:
        return self.rounds[-1] if self.rounds else None

    def variant_name(self, vid: str) -> str:
        if vid == "baseline":
            return "baseline"
        for v in self.variants:
            if v.id == vid:
                return v.name
        return vid[:8]

    def hypothesis(self, hid: str | None) -> m.Hypothesis | None:
        return next((h for h in self.hypotheses if h.id == hid), None)

    def step(self, name: m.StepName) -> m.StepStatus:
        for s in self.steps:
            if s.step is name:
                return s
        return m.StepStatus(step=name)

    def correctness_of(self, vid: str) -> list[m.CorrectnessResult]:
        return [c for c in self.correctness if c.variant_id == vid]

    def disposition_of(self, vid: str) -> m.Disposition | None:
        rows = [d for d in self.dispositions if d.variant_id == vid]
        return rows[-1] if rows else None

    def residual_of(self, vid: str) -> m.Residual | None:
        rows = [r for r in self.residuals if r.variant_id == vid]
        return rows[-1] if rows else None


def load_view(ledger: Any, session_id: str) -> SessionView:
    """One consistent picture of a session. Its rows that do not validate are left out of
    the lists and named in `view.unreadable`; an unreadable session row itself raises
    `ledger.store.UnreadableRowError` (one line: table and rowid)."""
    outer = ledger.unreadable
    ledger.unreadable = []  # collect this view's own unreadable rows
    try:
        view = _load_view(ledger, session_id)
        view.unreadable = list(ledger.unreadable)
    finally:
        met = ledger.unreadable
        ledger.unreadable = outer
        for row in met:
            if row not in outer:
                outer.append(row)
    return view


def _load_view(ledger: Any, session_id: str) -> SessionView:
    read = ledger.get_versioned(m.Session, session_id)
    if read is None:
        raise LookupError(f"no session {session_id} in {ledger.path}")
    session = read.model
    sid = session.id
    view = SessionView(
        session_read=read,
        session=session,
        baselines=ledger.list(m.Baseline, session_id=sid, order_by="created_at, rowid"),
        hypotheses=ledger.list(m.Hypothesis, session_id=sid, order_by="created_at, rowid"),
        variants=ledger.list(m.Variant, session_id=sid, order_by="created_at, rowid"),
        rounds=ledger.list(m.Round, session_id=sid, order_by="number, rowid"),
        correctness=ledger.list(m.CorrectnessResult, session_id=sid),
        audits=ledger.list(m.Audit, session_id=sid),
        residuals=ledger.list(m.Residual, session_id=sid),
        dispositions=ledger.list(m.Disposition, session_id=sid, order_by="created_at, rowid"),
        preflight=ledger.list(m.PreflightAnswer, session_id=sid),
    )
    for r in view.rounds:
        view.comparisons[r.id] = ledger.list(m.Comparison, round_id=r.id)
    if view.baseline is not None:
        view.baseline_runs = baseline_run_count(ledger, view.baseline.id)
    view.steps = step_states(ledger, session)
    view.floors = check_words.baseline_floors(ledger, sid)
    return view


# ---------------------------------------------------------------------------- counts


def baseline_run_count(ledger: Any, baseline_id: str) -> int:
    """Runs of the baseline itself (not of rounds), warm-ups and failures included."""
    rows = ledger.query(
        "SELECT COUNT(*) AS n FROM runs WHERE baseline_id = ? AND round_id IS NULL",
        (baseline_id,),
    )
    return int(rows[0]["n"]) if rows else 0


def values_per_workload(ledger: Any, baseline_id: str) -> dict[str, int]:
    """How many measured runs of the baseline itself (not of rounds) gave a value."""
    rows = ledger.query(
        "SELECT workload, COUNT(*) AS n FROM runs WHERE baseline_id = ? AND round_id IS NULL "
        "AND warmup = 0 AND status = 'ok' GROUP BY workload",
        (baseline_id,),
    )
    return {r["workload"]: r["n"] for r in rows}


# ---------------------------------------------------------------------------- rows a screen lists


def session_rows(ledger: Any) -> list[dict[str, Any]]:
    """Every session's listing row (id, title, repo, counts), as the picker shows them."""
    return list(ledger.session_rows())


def stored_session(ledger: Any, session_id: str) -> m.Session | None:
    """The session row as stored now (None: gone)."""
    found: m.Session | None = ledger.get(m.Session, session_id)
    return found


def evidence_of(ledger: Any, session_id: str, hypothesis_id: str | None = None) -> list[m.Evidence]:
    """A session's evidence, oldest first (only one hypothesis's when given)."""
    rows = ledger.list(m.Evidence, session_id=session_id, order_by="created_at, rowid")
    return [e for e in rows if hypothesis_id is None or e.hypothesis_id == hypothesis_id]


def stored_preflight(ledger: Any, session_id: str) -> dict[m.PreflightQuestion, m.PreflightAnswer]:
    """The preflight answers as stored now (newer than a view's, when written elsewhere)."""
    return {a.question: a for a in ledger.list(m.PreflightAnswer, session_id=session_id)}


def rejected_hypotheses(ledger: Any) -> list[m.Hypothesis]:
    """Every session's rejected hypotheses, newest first (the review's list)."""
    return list(
        ledger.list(
            m.Hypothesis, status=m.HypothesisStatus.REJECTED, order_by="created_at DESC, rowid DESC"
        )
    )


def check_sessions(ledger: Any) -> None:
    """Read every session row once, so a bad one is named (ledger.unreadable), not fatal."""
    ledger.list(m.Session)


def kept_per_session(ledger: Any) -> dict[str, int]:
    """Per session id, how many of its dispositions keep a variant (any of the keep kinds)."""
    rows = ledger.query(
        "SELECT session_id, COUNT(*) AS n FROM dispositions "
        "WHERE choice LIKE 'keep%' GROUP BY session_id"
    )
    return {r["session_id"]: r["n"] for r in rows}


# ---------------------------------------------------------------------------- questions


def residual_suggestion(
    ledger: Any, view: SessionView, variant: m.Variant
) -> tuple[m.ResidualClass, str] | None:
    """(class, explanation) the method suggests for a measured variant; None before its
    last round compared it. Kept in the view: it is asked at every repaint."""
    rnd = view.last_round
    if rnd is None:
        return None
    if variant.id in view.suggestions:
        return view.suggestions[variant.id]
    if not any(c.variant_id == variant.id for c in view.comparisons.get(rnd.id, [])):
        return None
    found = suggest_residual(ledger, view.session, variant)
    view.suggestions[variant.id] = (found.suggested, found.explanation)
    return view.suggestions[variant.id]


def confirm_residual(
    ledger: Any, view: SessionView, variant: m.Variant, cls: m.ResidualClass, note: str = ""
) -> m.Residual:
    """The person's reading of the variant's residual: the stored suggestion (recorded now
    if there is none) confirmed as `cls`."""
    residual = view.residual_of(variant.id) or record_residual(ledger, view.session, variant)
    return confirm_residual_class(ledger, residual, cls, why=note)


# The form's own fields, filled in, so the gates name only what the measurements lack.
_FILLED_FORM: dict[str, Any] = {
    "guards": ["(guard)"],
    "fallback": "(fallback)",
    "reason": "(reason)",
    "reopen_when": "(condition)",
    "accepted_semantics": True,
}


def disposition_gates(
    ledger: Any, view: SessionView, variant: m.Variant
) -> dict[m.DispositionChoice, list[str]]:
    """Per choice, what the measurements still lack (the form's own fields aside): the
    method's own gates (`session.gates.check_disposition`), as the command line applies them."""
    suggested = next(
        (c.suggested_class for c in view.correctness_of(variant.id) if c.suggested_class), None
    )
    out: dict[m.DispositionChoice, list[str]] = {}
    for choice in m.DispositionChoice:
        d = m.Disposition(
            session_id=view.session.id,
            variant_id=variant.id,
            choice=choice,
            optimization_class=suggested or m.OptimizationClass.NA,
            **_FILLED_FORM,
        )
        out[choice] = check_disposition(ledger, view.session, d)
    return out


# ---------------------------------------------------------------------------- the record's reads


def record_reads(ledger: Any, view: SessionView) -> RecordReads:
    """What the decision record reads beyond the view: evidence, each hypothesis's history,
    per round the medians of every arm, the trust and status counts of its runs."""
    sid = view.session.id
    reads = RecordReads(
        evidence=ledger.list(m.Evidence, session_id=sid, order_by="created_at, rowid"),
    )
    for h in view.hypotheses:
        reads.history[h.id] = ledger.list(
            m.HypothesisEvent, hypothesis_id=h.id, order_by="at, rowid"
        )
    for r in view.rounds:
        reads.medians[r.id] = arm_medians(ledger, r.id)
        reads.trust[r.id] = {
            (row["arm"], row["workload"], row["trust"]): int(row["n"])
            for row in ledger.query(
                "SELECT arm, workload, trust, COUNT(*) AS n FROM runs WHERE round_id = ? "
                "AND warmup = 0 GROUP BY arm, workload, trust ORDER BY trust",
                (r.id,),
            )
        }
        counts: dict[str, int] = {"total": 0}
        for row in ledger.query(
            "SELECT status, trust, COUNT(*) AS n FROM runs WHERE round_id = ? "
            "GROUP BY status, trust ORDER BY status, trust",
            (r.id,),
        ):
            counts["total"] += row["n"]
            counts[row["status"]] = counts.get(row["status"], 0) + row["n"]
            key = f"trust_{row['trust']}"
            counts[key] = counts.get(key, 0) + row["n"]
        reads.runs[r.id] = counts
    return reads


@dataclass
class RecordReads:
    evidence: list[m.Evidence] = field(default_factory=list)
    history: dict[str, list[m.HypothesisEvent]] = field(default_factory=dict)
    # round id -> (arm, workload) -> median value of its measured, kept runs
    medians: dict[str, dict[tuple[str, str], float]] = field(default_factory=dict)
    # round id -> (arm, workload, trust) -> runs
    trust: dict[str, dict[tuple[str, str, str], int]] = field(default_factory=dict)
    runs: dict[str, dict[str, int]] = field(default_factory=dict)  # round id -> counts


def arm_medians(ledger: Any, round_id: str) -> dict[tuple[str, str], float]:
    """(arm, workload) -> the median value of the round's measured runs that count (ok,
    not warm-ups: quarantined runs are left out, as the statistics leave them out)."""
    values: dict[tuple[str, str], list[float]] = {}
    for row in ledger.query(
        "SELECT arm, workload, value FROM runs WHERE round_id = ? AND warmup = 0 "
        "AND status = 'ok' AND value IS NOT NULL",
        (round_id,),
    ):
        values.setdefault((row["arm"], row["workload"]), []).append(float(row["value"]))
    return {k: statistics.median(v) for k, v in values.items()}
