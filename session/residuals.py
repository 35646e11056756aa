"""Residuals: how what was observed differs from what the hypothesis predicted.

Two observations are read: did the target metric move (the comparisons' verdicts) and did
the mechanism move (the profiles of baseline and variant from `gpuopt profile`, else their
audits; the person's own reading overrides both and is recorded as an override). Together
with the prediction they give one of five residual classes. The suggestion is only a
suggestion: the person confirms it, and the confidence change that follows is written to the
hypothesis's history.

Also here: the round summary, the short executable account of a round. The person's text
is kept in `Round.summary["search_round"]` under the keys of `ROUND_SUMMARY_FIELDS` (the
engine keeps its own keys beside it: seed, stop reason, notes, baseline check ratios).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from measure.numerics import format_bytes
from session import hypotheses
from session import models as m
from session.concerns import record_suggestions
from session.dispositions import DESCRIPTIONS as CHOICE_WORDS
from session.gates import latest_comparisons, latest_comparisons_in, latest_correctness_in
from session.profile.base import newest_profiles
from session.profile.check import mechanism
from session.verdicts import shown_verdict
from session.view import SessionView, load_rows

R = m.ResidualClass
# Per workload, the profile summaries of the baseline and of the variant (session.profile).
ProfilePair = tuple[Mapping[str, Mapping[str, Any]], Mapping[str, Mapping[str, Any]]]

DESCRIPTIONS: dict[m.ResidualClass, str] = {
    R.AS_PREDICTED: "the target metric and the mechanism evidence both moved as predicted: "
    "the hypothesis gains support",
    R.NOTHING_MOVED: "neither moved: the mechanism is probably wrong, or the change never "
    "reached the hardware",
    R.MECHANISM_ONLY: "the mechanism moved but the target metric did not: look for a cost "
    "that cancels the gain, a phase that does not matter, or a bottleneck further on",
    R.METRIC_ONLY: "the target metric moved without the predicted mechanism: check the "
    "confounders and write a new mechanism",
    R.OPPOSITE_SIGN: "something moved the other way: keep it as valuable evidence and "
    "investigate rather than calling it noise",
}

# The same classes in a few words, where a line has room for little more (a form's choice).
SHORT: dict[m.ResidualClass, str] = {
    R.AS_PREDICTED: "moved as predicted",
    R.NOTHING_MOVED: "nothing moved: the mechanism is wrong or the change never ran",
    R.MECHANISM_ONLY: "the mechanism moved, the metric did not: a cost elsewhere",
    R.METRIC_ONLY: "the metric moved without the mechanism: look for a confounder",
    R.OPPOSITE_SIGN: "it moved the wrong way: keep it as evidence",
}

AUDIT_FIELDS = {
    "kernel_launches": "kernel launches",
    "operator_count": "operators",
    "allocation_count": "allocations",
    "peak_bytes": "peak memory",
}

_FIELD_WORDS = {
    "kernel_launches": re.compile(r"kernel|launch", re.I),
    "operator_count": re.compile(r"operator|\bops?\b|op count", re.I),
    "allocation_count": re.compile(r"alloc", re.I),
    "peak_bytes": re.compile(r"peak|memory|footprint|bytes", re.I),
}
_DOWN = re.compile(r"fewer|less|lower|reduc|drop|remov|eliminat|smaller|decreas|down|cut", re.I)
_UP = re.compile(r"more|higher|increas|larger|grow|rise|\bup\b", re.I)

SEARCH_ROUND = "search_round"  # the key of Round.summary that holds the person's text

ROUND_SUMMARY_FIELDS: dict[str, str] = {
    "baseline_id": "Baseline ID and reference result",
    "reset_procedure": "how every variant returns to the baseline",
    "hypotheses": "hypotheses and what should tell them apart",
    "variants": "one factor per variant, all from the baseline",
    "baseline_check": "the baseline check of the round",
    "results": "target metric and mechanism evidence, predicted and observed",
    "confidence_updates": "what each result changed",
    "residuals": "surprises and candidate compensating costs",
    "disposition": "what was decided for each variant",
    "next": "the next profile, or what would reopen the question",
}


@dataclass
class ResidualSuggestion:
    suggested: m.ResidualClass
    metric: str  # "as_predicted" | "opposite" | "unmoved"
    mechanism: str  # "as_predicted" | "opposite" | "unmoved" | "unknown"
    reasons: list[str] = field(default_factory=list)

    @property
    def explanation(self) -> str:
        return "; ".join(self.reasons)


def predicts_improvement(h: m.Hypothesis | None, metric: m.Metric) -> bool:
    """A hypothesis without a predicted direction is taken to predict an improvement."""
    if h is None or h.predicted_direction is None:
        return True
    return h.predicted_direction is metric.direction


def _metric_movement(
    comparisons: Sequence[m.Comparison],
    improve: bool,
    failed: Sequence[str] = (),
    untrusted: str = "",
) -> tuple[str, str]:
    """How the target metric moved. `failed`: the workloads whose correctness check failed;
    with any, the metric was not measured as a valid result (its timings are of wrong
    results) and counts as unmoved, as a metric never measured does. `untrusted`: why a
    verdict of these cannot be relied on (session.verdicts): unmoved too, for that reason."""
    if failed and comparisons:
        return "unmoved", (
            "the target metric was not measured as a valid result: its correctness check "
            f"failed on {', '.join(failed)}, so its timings are of wrong results and say "
            "nothing of the prediction; make it correct, then run a round"
        )
    if untrusted and comparisons:  # after a failed check: a rerun would not fix that
        return "unmoved", (
            f"the target metric's verdict is untrusted ({untrusted}), so it says nothing of "
            "the prediction until a round's verdict is trusted"
        )
    faster = [c.workload for c in comparisons if c.verdict is m.Verdict.FASTER]
    slower = [c.workload for c in comparisons if c.verdict is m.Verdict.SLOWER]
    if not comparisons:
        return "unmoved", "no comparison recorded"
    if all(c.n == 0 for c in comparisons):
        return "unmoved", (
            "the target metric was never measured: no run of the variant gave a value; "
            "make it run, then run a round before reading a residual"
        )
    if not faster and not slower:
        verdicts = ", ".join(f"{c.workload} {c.verdict.value}" for c in comparisons)
        return "unmoved", f"the target metric did not move ({verdicts})"
    wanted, unwanted = (faster, slower) if improve else (slower, faster)
    if unwanted:
        return "opposite", (
            f"the target metric moved against the prediction on {', '.join(unwanted)}"
        )
    return "as_predicted", f"the target metric moved as predicted on {', '.join(wanted)}"


def predicted_audit_moves(text: str) -> dict[str, int]:
    """Which audit fields the predicted evidence names, and the sign it expects (-1, +1, 0)."""
    out: dict[str, int] = {}
    for clause in re.split(r"[.;,\n]|\band\b", text):
        sign = -1 if _DOWN.search(clause) else 1 if _UP.search(clause) else 0
        for name, pattern in _FIELD_WORDS.items():
            if pattern.search(clause):
                out.setdefault(name, sign)
    return out


def audit_deltas(
    audits: Sequence[m.Audit], variant_id: str, tolerance: float = 0.05
) -> dict[str, list[tuple[str, float, float]]]:
    """Per audit field, the workloads whose value moved by more than `tolerance` (relative):
    (workload, baseline value, variant value)."""
    base = {a.workload: a for a in audits if a.arm == "baseline"}
    moved: dict[str, list[tuple[str, float, float]]] = {}
    for a in audits:
        if a.arm != variant_id or a.workload not in base:
            continue
        b = base[a.workload]
        for name in AUDIT_FIELDS:
            old, new = getattr(b, name), getattr(a, name)
            if old is None or new is None:
                continue
            if abs(new - old) > tolerance * max(abs(old), 1):
                moved.setdefault(name, []).append((a.workload, float(old), float(new)))
    return moved


def _fmt_move(name: str, moves: list[tuple[str, float, float]]) -> str:
    def value(x: float) -> str:
        return format_bytes(x) if name == "peak_bytes" else f"{x:g}"

    return f"{AUDIT_FIELDS[name]} " + ", ".join(f"{w} {value(o)} → {value(n)}" for w, o, n in moves)


def _measured_movement(
    predicted_evidence: str,
    audits: Sequence[m.Audit],
    variant_id: str,
    profiles: ProfilePair | None,
) -> tuple[str, str]:
    """The mechanism movement measured: from the profiles of both arms when there are, else
    from the audits."""
    if profiles is not None:
        found = mechanism(predicted_evidence, profiles[0], profiles[1])
        if found is not None:
            return found[0], found[1]
    arms = {a.arm for a in audits}
    if "baseline" not in arms or variant_id not in arms:
        return (
            "unknown",
            "no audit or profile of both baseline and variant: mechanism treated as unmoved",
        )
    moved = audit_deltas(audits, variant_id)
    predicted = predicted_audit_moves(predicted_evidence)
    if predicted:
        good: list[tuple[str, str, float, float]] = []
        bad: list[tuple[str, str, float, float]] = []
        for name, sign in predicted.items():
            for w, old, new in moved.get(name, []):
                step = 1 if new > old else -1
                (good if sign in (0, step) else bad).append((name, w, old, new))
        if good:
            return "as_predicted", "the predicted evidence moved: " + "; ".join(
                _fmt_move(n, [(w, o, v)]) for n, w, o, v in good
            )
        if bad:
            return "opposite", "the predicted evidence moved the other way: " + "; ".join(
                _fmt_move(n, [(w, o, v)]) for n, w, o, v in bad
            )
        names = ", ".join(AUDIT_FIELDS[n] for n in predicted)
        return "unmoved", f"the predicted evidence ({names}) did not move"
    if moved:
        return "as_predicted", "the audits moved: " + "; ".join(
            _fmt_move(n, v) for n, v in moved.items()
        )
    return "unmoved", "the audits did not move"


_STATE_WORDS = {
    "as_predicted": "moved as predicted",
    "opposite": "moved the other way",
    "unmoved": "did not move",
    "unknown": "not measured",
}
OVERRIDE = "override"  # the word that marks a person's reading in a residual's reasons


def _mechanism_movement(
    predicted_evidence: str,
    audits: Sequence[m.Audit],
    variant_id: str,
    mechanism_moved: bool | None,
    profiles: ProfilePair | None = None,
) -> tuple[str, str]:
    measured, why = _measured_movement(predicted_evidence, audits, variant_id, profiles)
    if mechanism_moved is None:
        return measured, why
    # The person's reading wins, and says so: the measured movement stays beside it.
    state = "as_predicted" if mechanism_moved else "unmoved"
    said = "moved as predicted" if mechanism_moved else "did not move"
    if measured == "unknown":
        return state, f"your {OVERRIDE}: the mechanism evidence {said} (nothing measured)"
    agree = " (the measurement agrees)" if measured == state else ""
    return state, (
        f"your {OVERRIDE}: the mechanism evidence {said}{agree}; measured, it "
        f"{_STATE_WORDS[measured]}: {why}"
    )


def classify(
    *,
    improve: bool,
    comparisons: Sequence[m.Comparison],
    audits: Sequence[m.Audit] = (),
    variant_id: str = "",
    predicted_evidence: str = "",
    mechanism_moved: bool | None = None,
    profiles: ProfilePair | None = None,
    failed: Sequence[str] = (),
    untrusted: str = "",
) -> ResidualSuggestion:
    """The residual class for one variant, with the reasons read from the observations.

    The mechanism is read from the profiles of both arms (per workload summaries) when given,
    else from the audits; `mechanism_moved` is the person's override, recorded as such.
    `failed`: the workloads whose correctness check failed, and `untrusted`: why a verdict
    cannot be relied on (the metric is then not a valid measurement, so never "moved as
    predicted")."""
    metric, why_metric = _metric_movement(comparisons, improve, failed, untrusted)
    mech, why_mech = _mechanism_movement(
        predicted_evidence, audits, variant_id, mechanism_moved, profiles
    )
    reasons = [why_metric, why_mech]
    if metric == "opposite" or mech == "opposite":
        cls = R.OPPOSITE_SIGN
    elif metric == "as_predicted":
        cls = R.AS_PREDICTED if mech == "as_predicted" else R.METRIC_ONLY
    else:
        cls = R.MECHANISM_ONLY if mech == "as_predicted" else R.NOTHING_MOVED
    return ResidualSuggestion(cls, metric, mech, reasons)


def suggest_residual(
    ledger: Any,
    session: m.Session,
    variant: m.Variant,
    *,
    round_id: str | None = None,
    mechanism_moved: bool | None = None,
) -> ResidualSuggestion:
    """Read the ledger for a variant (its latest round unless given) and suggest a class."""
    view = load_rows(ledger, session.id, session)
    return suggest_residual_in(view, variant, round_id=round_id, mechanism_moved=mechanism_moved)


def suggest_residual_in(
    view: SessionView,
    variant: m.Variant,
    *,
    round_id: str | None = None,
    mechanism_moved: bool | None = None,
) -> ResidualSuggestion:
    """The class the method suggests for a variant (its latest round unless given), of the
    rows one view holds."""
    session = view.session
    h = view.hypothesis(variant.hypothesis_id) if variant.hypothesis_id else None
    if round_id:
        rnd = view.round(round_id)
        comps = [c for c in view.comparisons.get(round_id, []) if c.variant_id == variant.id]
    else:
        rnd, comps = latest_comparisons_in(view, variant)
    # the one rule of trust every door reads: the round's, and each comparison's own
    shown = [shown_verdict(c, round=rnd) for c in comps]
    untrusted = next((s.untrusted_why for s in shown if not s.trusted), "")
    audits = [a for a in view.audits if a.arm in ("baseline", variant.id)]
    profiles = (
        {w: e.summary for w, e in newest_profiles(view.evidence, "baseline").items()},
        {w: e.summary for w, e in newest_profiles(view.evidence, variant.id).items()},
    )
    # a speed-up of wrong results is no measurement of the prediction
    failed = sorted(r.workload for r in latest_correctness_in(view, variant) if not r.passed)
    return classify(
        improve=predicts_improvement(h, session.contract.metric),
        comparisons=comps,
        audits=audits,
        variant_id=variant.id,
        predicted_evidence=h.predicted_evidence if h else "",
        mechanism_moved=mechanism_moved,
        profiles=profiles,
        failed=failed,
        untrusted=untrusted,
    )


def record_residual(
    ledger: Any,
    session: m.Session,
    variant: m.Variant,
    *,
    round_id: str | None = None,
    mechanism_moved: bool | None = None,
    note: str = "",
) -> m.Residual:
    """Store the suggestion (not yet confirmed) for the person to confirm or correct.

    An unconfirmed suggestion for the same variant and round is replaced, not repeated."""

    s = suggest_residual(
        ledger, session, variant, round_id=round_id, mechanism_moved=mechanism_moved
    )
    if round_id is None:
        rnd, _ = latest_comparisons(ledger, variant)
        round_id = rnd.id if rnd else None
    pending = [
        r
        for r in ledger.list(m.Residual, variant_id=variant.id, order_by="created_at, rowid")
        if r.round_id == round_id and r.confirmed is None
    ]
    residual = m.Residual(
        session_id=session.id,
        variant_id=variant.id,
        hypothesis_id=variant.hypothesis_id,
        round_id=round_id,
        suggested=s.suggested,
        note=note or s.explanation,
    )
    if pending:
        residual.id = pending[-1].id
    ledger.put(residual)
    h = ledger.get(m.Hypothesis, variant.hypothesis_id) if variant.hypothesis_id else None
    if h is not None:  # correctness and audits are in by now: they may raise concern areas
        record_suggestions(ledger, session, h)
    return residual


def confirm_residual(
    ledger: Any,
    residual: m.Residual,
    confirmed: m.ResidualClass | str,
    *,
    confidence: m.Confidence | str | None = None,
    status: m.HypothesisStatus | str | None = None,
    why: str = "",
) -> m.Residual:
    """The person's reading of the residual; the confidence (and status) change it brings is
    recorded on the hypothesis, with its history."""

    cls = m.ResidualClass(confirmed)
    residual.confirmed = cls
    if why:
        residual.note = why
    h = ledger.get(m.Hypothesis, residual.hypothesis_id) if residual.hypothesis_id else None
    reason = why or f"residual {cls.value}: {DESCRIPTIONS[cls]}"
    if h is not None:
        residual.confidence_from = h.confidence
        if confidence is not None:
            h = hypotheses.set_confidence(ledger, h, confidence, reason)
        residual.confidence_to = h.confidence
        if status is not None:
            hypotheses.set_status(ledger, h, status, reason)
    ledger.put(residual)
    return residual


# ---------------------------------------------------------------------------- round summary


def _rests_on(rounds: Sequence[m.Round], disposition: m.Disposition) -> str | None:
    """The round a disposition rests on: the last one with its variant that ended before it."""
    ended = [
        r
        for r in rounds
        if disposition.variant_id in r.variant_ids
        and r.ended_at is not None
        and r.ended_at <= disposition.created_at
    ]
    return max(ended, key=lambda r: r.ended_at or r.started_at).id if ended else None


def draft_round_summary(ledger: Any, rnd: m.Round) -> dict[str, str]:
    """A round summary filled from the ledger; text the person wrote (stored) wins."""
    return draft_round_summary_in(load_rows(ledger, rnd.session_id), rnd)


def draft_round_summary_in(view: SessionView, rnd: m.Round) -> dict[str, str]:
    """A round summary filled from one view's rows; text the person wrote (stored) wins."""
    session = view.session
    baseline = next((b for b in view.baselines if b.id == rnd.baseline_id), None)
    variants = [v for vid in rnd.variant_ids if (v := view.variant(vid))]
    names = {v.id: v.name for v in variants}
    comps = view.comparisons.get(rnd.id, [])
    hyps = {v.hypothesis_id: view.hypothesis(v.hypothesis_id) for v in variants if v.hypothesis_id}
    residuals = [r for r in view.residuals if r.round_id == rnd.id]
    dispositions = [
        d
        for d in view.dispositions
        if d.variant_id in names and _rests_on(view.rounds, d) == rnd.id
    ]
    checks = view.correctness
    ref = ""
    if baseline is not None:
        ref = ", ".join(f"{k}={v:.6g}" for k, v in baseline.reference.items())
    reset = (baseline.reset_procedure if baseline else "") or (
        f"worktree at the snapshot; prepare: {session.contract.hooks.prepare}"
        if session and session.contract.hooks.prepare
        else "worktree at the snapshot"
    )
    check = "not measured"
    if rnd.baseline_check is not None:
        state = {True: "reproduced", False: "not reproduced", None: "unjudged"}[
            rnd.baseline_reproduced
        ]
        per = rnd.summary.get("baseline_check")
        if isinstance(per, dict) and per:
            ratios = ", ".join(
                f"{k} {v:.3f}" for k, v in per.items() if isinstance(v, (int, float))
            )
            check = f"baseline against its reference: {ratios} ({state})"
        else:
            check = f"baseline ratio {rnd.baseline_check:.3f} against its reference ({state})"
    draft = {
        "baseline_id": f"{rnd.baseline_id}" + (f" ({ref})" if ref else ""),
        "reset_procedure": reset,
        "hypotheses": "; ".join(
            f"{h.id} {h.title}: cheapest falsifier: {h.falsifier or '—'}"
            for h in hyps.values()
            if h
        ),
        "variants": "; ".join(
            f"{v.name} ({'probe' if v.probe else 'change'}, {v.snapshot.commit[:12]})"
            for v in variants
        ),
        "baseline_check": check,
        "results": "; ".join(
            f"{names.get(c.variant_id, c.variant_id)}/{c.workload}: "
            + (f"{c.ratio:.3f} " if c.ratio is not None else "")
            + shown_verdict(c, checks, rnd).text
            for c in comps
        ),
        "confidence_updates": "; ".join(
            f"{names.get(r.variant_id, r.variant_id)}: "
            f"{r.confidence_from.value} → {r.confidence_to.value}"
            for r in residuals
            if r.confidence_from and r.confidence_to
        ),
        "residuals": "; ".join(
            f"{names.get(r.variant_id, r.variant_id)}: {SHORT[r.confirmed or r.suggested]}"
            + ("" if r.confirmed else " (suggested)")
            for r in residuals
        ),
        "disposition": "; ".join(
            f"{names.get(d.variant_id)}: {CHOICE_WORDS[d.choice]}" for d in dispositions
        ),
        "next": "; ".join(
            f"{h.id}: {h.reopen_when}" for h in hyps.values() if h and h.reopen_when.strip()
        ),
    }
    mine = rnd.summary.get(SEARCH_ROUND)
    stored = mine if isinstance(mine, dict) else {}
    written = {k: str(v) for k, v in stored.items() if k in ROUND_SUMMARY_FIELDS and v}
    return {**draft, **written}


def set_round_summary(ledger: Any, rnd: m.Round, **fields: str) -> m.Round:
    """Store the person's text for some search-round fields, in
    `Round.summary["search_round"]` (the engine's own keys are left alone)."""
    unknown = sorted(set(fields) - set(ROUND_SUMMARY_FIELDS))
    if unknown:
        raise ValueError(f"a round summary has no field {', '.join(unknown)}")
    with ledger.write():  # read and written together: a write between them is not undone
        fresh = ledger.get(m.Round, rnd.id) or rnd
        old = fresh.summary.get(SEARCH_ROUND)
        mine = dict(old) if isinstance(old, dict) else {}
        mine.update({k: v for k, v in fields.items() if v is not None})
        fresh.summary = {**fresh.summary, SEARCH_ROUND: mine}
        ledger.put(fresh)
    return fresh
