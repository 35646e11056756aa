"""The rows of one session, read once: `SessionView` and the loader that fills it.

Each table is read once, filtered to the session (`load_rows`); the rules of the method
(session.gates, steps, residuals, dispositions) are functions of the view, so they read
nothing themselves and can be tested on a view built by hand. Rows that do not validate are
left out of the lists (the ledger notes them; `session.read_model.load_view` names them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ledger import queries
from session import check_words
from session import models as m


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
    # rows only the rules and the record read: the session's evidence, oldest first, and
    # the checklist items touched (number, done, note; session.preflight.checklist_of)
    evidence: list[m.Evidence] = field(default_factory=list)
    checklist: list[dict[str, Any]] = field(default_factory=list)
    # what a round may do on a baseline too noisy for its band (session.gates.baseline_warning)
    baseline_advice: str = ""
    # the rounds' runs (round_id, arm, workload, trust, status, warmup, value), read with the
    # baseline's count when the whole record is gathered; None: not read with the view
    round_run_rows: list[dict[str, Any]] | None = None

    @property
    def checklist_touched(self) -> int:
        return len(self.checklist)

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

    def variant(self, vid: str) -> m.Variant | None:
        return next((v for v in self.variants if v.id == vid), None)

    def round(self, rid: str | None) -> m.Round | None:
        return next((r for r in self.rounds if r.id == rid), None)

    def all_comparisons(self) -> list[m.Comparison]:
        return [c for rows in self.comparisons.values() for c in rows]

    def residual_of(self, vid: str) -> m.Residual | None:
        rows = [r for r in self.residuals if r.variant_id == vid]
        return rows[-1] if rows else None


def load_rows(
    ledger: Any, session_id: str, session: m.Session | None = None, *, run_rows: bool = False
) -> SessionView:
    """The session's rows, one read per table. `session`: the caller's copy, used where the
    session row is not stored (or does not read back). `run_rows`: the rounds' runs too, in
    the one read of runs (what the record needs; a screen's refresh only counts)."""
    read = ledger.get_versioned(m.Session, session_id)
    if read is not None:
        session = read.model
    elif session is None:
        raise LookupError(f"no session {session_id} in {ledger.path}")
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
        evidence=ledger.list(m.Evidence, session_id=sid, order_by="created_at, rowid"),
    )
    # comparisons carry their round, not their session: one read for every round's rows
    ids = tuple(r.id for r in view.rounds)
    comps = ledger.list(m.Comparison, round_id=ids) if ids else []
    for r in view.rounds:
        view.comparisons[r.id] = [c for c in comps if c.round_id == r.id]
    if run_rows:
        rows = queries.session_runs(ledger, view.baseline.id if view.baseline else None, ids)
        view.baseline_runs = sum(1 for r in rows if r["round_id"] is None)
        view.round_run_rows = [r for r in rows if r["round_id"] is not None]
    elif view.baseline is not None:
        view.baseline_runs = baseline_run_count(ledger, view.baseline.id)
    view.checklist = queries.checklist_rows(ledger, sid)
    return view


def baseline_run_count(ledger: Any, baseline_id: str) -> int:
    """Runs of the baseline itself (not of rounds), warm-ups and failures included."""
    return queries.baseline_run_count(ledger, baseline_id)
