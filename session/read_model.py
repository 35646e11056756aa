"""The read model of one session: everything a front end shows of it, read in one go.

`load_view` reads a session and its rows into a typed `SessionView` (session.view: one read
per table); the app draws it, and the few questions a screen asks about what it shows (the
residual the round suggests, what each disposition still lacks) are answered here by the
method's own functions, of the view alone: a redraw reads nothing. Every count
or listing a front end needs beyond the models is read here too, so no SQL lives in `tui/`.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from ledger import queries
from session import check_words
from session import models as m
from session.gates import baseline_warning, check_disposition_in
from session.profile.base import newest_profiles
from session.residuals import confirm_residual as confirm_residual_class
from session.residuals import record_residual, suggest_residual_in
from session.steps import step_states_of
from session.view import SessionView, load_rows
from session.view import baseline_run_count as baseline_run_count  # its callers' old home

STEP_ORDER: tuple[m.StepName, ...] = tuple(m.StepName)


def load_view(ledger: Any, session_id: str, *, run_rows: bool = False) -> SessionView:
    """One consistent picture of a session. Its rows that do not validate are left out of
    the lists and named in `view.unreadable`; an unreadable session row itself raises
    `ledger.store.UnreadableRowError` (one line: table and rowid). `run_rows`: the rounds'
    runs too, for the record (session.view.load_rows)."""
    outer = ledger.unreadable
    ledger.unreadable = []  # collect this view's own unreadable rows
    try:
        view = _load_view(ledger, session_id, run_rows)
        view.unreadable = list(ledger.unreadable)
    finally:
        met = ledger.unreadable
        ledger.unreadable = outer
        for row in met:
            if row not in outer:
                outer.append(row)
    return view


def _load_view(ledger: Any, session_id: str, run_rows: bool = False) -> SessionView:
    view = load_rows(ledger, session_id, run_rows=run_rows)
    if view.baseline is not None:  # reads the baseline's runs only when it is too noisy
        view.baseline_advice = baseline_warning(ledger, view.session, view.baseline)
    view.steps = step_states_of(view)
    view.floors = check_words.floors_of(newest_profiles(view.evidence, "baseline"))
    return view


# ---------------------------------------------------------------------------- counts


def values_per_workload(ledger: Any, baseline_id: str) -> dict[str, int]:
    """How many measured runs of the baseline itself (not of rounds) gave a value."""
    return queries.values_per_workload(ledger, baseline_id)


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
    return queries.kept_per_session(ledger)


# ---------------------------------------------------------------------------- questions


def residual_suggestion(
    ledger: Any, view: SessionView, variant: m.Variant
) -> tuple[m.ResidualClass, str] | None:
    """(class, explanation) the method suggests for a measured variant; None before its
    last round compared it. Of the view alone (`ledger` is not read): it is asked at every
    repaint, and kept in the view."""
    rnd = view.last_round
    if rnd is None:
        return None
    if variant.id in view.suggestions:
        return view.suggestions[variant.id]
    if not any(c.variant_id == variant.id for c in view.comparisons.get(rnd.id, [])):
        return None
    found = suggest_residual_in(view, variant)
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
    return {c: _gate(view, variant, c, filled=True) for c in m.DispositionChoice}


def disposition_form_needs(
    view: SessionView, variant: m.Variant
) -> dict[m.DispositionChoice, list[str]]:
    """Per choice, what the decision form itself must hold for it (guards, fallback, why,
    reopen-when, the acceptance box), at the numerical class its check suggests: a new user
    read "keep as the default path: open", saved, and was refused for the Guards field."""
    out: dict[m.DispositionChoice, list[str]] = {}
    for choice in m.DispositionChoice:
        lacking = set(_gate(view, variant, choice, filled=True))
        out[choice] = [r for r in _gate(view, variant, choice, filled=False) if r not in lacking]
    return out


def _gate(
    view: SessionView, variant: m.Variant, choice: m.DispositionChoice, *, filled: bool
) -> list[str]:
    suggested = next(
        (c.suggested_class for c in view.correctness_of(variant.id) if c.suggested_class), None
    )
    d = m.Disposition(
        session_id=view.session.id,
        variant_id=variant.id,
        choice=choice,
        optimization_class=suggested or m.OptimizationClass.NA,
        **(_FILLED_FORM if filled else {}),
    )
    return check_disposition_in(view, d)


# ---------------------------------------------------------------------------- the record's reads


def record_reads(ledger: Any, view: SessionView) -> RecordReads:
    """What the decision record reads beyond the view: each hypothesis's history, per round
    the medians of every arm, the trust and status counts of its runs (one read of each
    table: the evidence is the view's)."""
    reads = RecordReads(evidence=list(view.evidence))
    ids = tuple(h.id for h in view.hypotheses)
    events = ledger.list(m.HypothesisEvent, hypothesis_id=ids, order_by="at, rowid") if ids else []
    for h in view.hypotheses:
        reads.history[h.id] = [e for e in events if e.hypothesis_id == h.id]
    rounds = tuple(r.id for r in view.rounds)
    rows = view.round_run_rows
    if rows is None:  # a view loaded for a screen: the rounds' runs were not read with it
        rows = queries.round_runs(ledger, rounds)
    for r in view.rounds:
        mine = [row for row in rows if row["round_id"] == r.id]
        reads.medians[r.id] = _medians(mine)
        trust: dict[tuple[str, str, str], int] = {}
        for row in sorted((x for x in mine if not x["warmup"]), key=lambda x: x["trust"]):
            key = (row["arm"], row["workload"], row["trust"])
            trust[key] = trust.get(key, 0) + 1
        reads.trust[r.id] = trust
        counts: dict[str, int] = {"total": 0}
        for row in sorted(mine, key=lambda x: (x["status"], x["trust"])):
            counts["total"] += 1
            counts[row["status"]] = counts.get(row["status"], 0) + 1
            tkey = f"trust_{row['trust']}"
            counts[tkey] = counts.get(tkey, 0) + 1
        reads.runs[r.id] = counts
    return reads


def _medians(rows: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """(arm, workload) -> the median value of the runs that count (ok, not warm-ups:
    quarantined runs are left out, as the statistics leave them out)."""
    values: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        if not row["warmup"] and row["status"] == "ok" and row["value"] is not None:
            values.setdefault((row["arm"], row["workload"]), []).append(float(row["value"]))
    return {k: statistics.median(v) for k, v in values.items()}


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
    return _medians(queries.round_runs(ledger, (round_id,)))
