"""Residual classification: the five cases, from comparisons and audits in a real ledger."""

from __future__ import annotations

import pytest
from method_factory import (
    make_audit,
    make_baseline,
    make_comparison,
    make_round,
    make_session,
    make_variant,
    open_ledger,
)

from session import models as m
from session.hypotheses import add_hypothesis, history
from session.residuals import (
    ROUND_SUMMARY_FIELDS,
    classify,
    confirm_residual,
    draft_round_summary,
    predicted_audit_moves,
    record_residual,
    set_round_summary,
    suggest_residual,
)

R = m.ResidualClass


@pytest.fixture
def ledger(tmp_path):
    with open_ledger(tmp_path) as lg:
        yield lg


def _setup(ledger, verdict, base_launches, var_launches, direction=None):
    s = make_session(ledger)
    h, _ = add_hypothesis(
        ledger,
        s,
        title="fuse softmax into the matmul epilogue",
        mechanism="the logits tensor is written and read back",
        predicted_effect="end-to-end time drops by about 10%",
        predicted_direction=direction,
        predicted_evidence="fewer kernel launches; peak memory lower",
        falsifier="count launches",
    )
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s, hypothesis_id=h.id)
    r = make_round(ledger, s, b, [v])
    make_comparison(ledger, r, v, verdict=verdict)
    make_audit(ledger, s, "baseline", launches=base_launches, peak=100 << 20)
    make_audit(ledger, s, v.id, launches=var_launches, peak=100 << 20)
    return s, h, v, r


@pytest.mark.parametrize(
    ("verdict", "launches", "expected"),
    [
        (m.Verdict.FASTER, 1, R.AS_PREDICTED),  # metric and mechanism as predicted
        (m.Verdict.SAME, 7, R.NOTHING_MOVED),  # nothing moved
        (m.Verdict.SAME, 1, R.MECHANISM_ONLY),  # launches dropped, time did not
        (m.Verdict.FASTER, 7, R.METRIC_ONLY),  # faster without the mechanism
        (m.Verdict.SLOWER, 1, R.OPPOSITE_SIGN),  # slower than before
        (m.Verdict.FASTER, 12, R.OPPOSITE_SIGN),  # launches went up, not down
        (m.Verdict.INCONCLUSIVE, 7, R.NOTHING_MOVED),  # undecided counts as unmoved
    ],
)
def test_five_classes_from_the_ledger(ledger, verdict, launches, expected):
    s, _, v, _ = _setup(ledger, verdict, 7, launches)
    got = suggest_residual(ledger, s, v)
    assert got.suggested is expected, got.reasons


def test_predicted_direction_is_respected(ledger):
    # predicting the metric goes UP on a lower-is-better metric: FASTER is the opposite sign
    s, _, v, _ = _setup(ledger, m.Verdict.FASTER, 7, 1, direction=m.Direction.HIGHER)
    assert suggest_residual(ledger, s, v).suggested is R.OPPOSITE_SIGN


def test_person_can_report_mechanism_without_audits():
    faster = [
        m.Comparison(round_id="r", variant_id="v", workload="e2e", n=10, verdict=m.Verdict.FASTER)
    ]
    unknown = classify(improve=True, comparisons=faster, variant_id="v")
    assert unknown.suggested is R.METRIC_ONLY and unknown.mechanism == "unknown"
    reported = classify(improve=True, comparisons=faster, variant_id="v", mechanism_moved=True)
    assert reported.suggested is R.AS_PREDICTED


def test_predicted_evidence_is_read_for_fields_and_signs():
    moves = predicted_audit_moves("fewer kernel launches; peak memory higher")
    assert moves == {"kernel_launches": -1, "peak_bytes": 1}
    assert predicted_audit_moves("something about caches") == {}


def test_unpredicted_audit_field_moving_is_not_the_mechanism(ledger):
    s = make_session(ledger)
    h, _ = add_hypothesis(ledger, s, title="x", predicted_evidence="fewer allocations")
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s, hypothesis_id=h.id)
    make_comparison(ledger, make_round(ledger, s, b, [v]), v, verdict=m.Verdict.FASTER)
    make_audit(ledger, s, "baseline", launches=7, peak=1, allocs=10)
    make_audit(ledger, s, v.id, launches=1, peak=1, allocs=10)  # launches moved, allocs not
    got = suggest_residual(ledger, s, v)
    assert got.suggested is R.METRIC_ONLY
    assert "allocations" in got.explanation


def test_confirmation_records_confidence_change_in_history(ledger):
    s, h, v, r = _setup(ledger, m.Verdict.FASTER, 7, 1)
    res = record_residual(ledger, s, v)
    assert res.suggested is R.AS_PREDICTED and res.confirmed is None and res.round_id == r.id
    assert "kernel launches" in res.note
    done = confirm_residual(
        ledger,
        res,
        "as_predicted",
        confidence="high",
        status="supported",
        why="7 → 1 launches, 26% faster",
    )
    stored = ledger.get(m.Residual, res.id)
    assert stored.confirmed is R.AS_PREDICTED
    assert (stored.confidence_from, stored.confidence_to) == (
        m.Confidence.MEDIUM,
        m.Confidence.HIGH,
    )
    assert done.confidence_to is m.Confidence.HIGH
    fresh = ledger.get(m.Hypothesis, h.id)
    assert fresh.confidence is m.Confidence.HIGH and fresh.status is m.HypothesisStatus.SUPPORTED
    events = [(e.field, e.from_value, e.to_value) for e in history(ledger, fresh)]
    assert ("confidence", "medium", "high") in events
    assert ("status", "proposed", "supported") in events


def test_round_summary_of_a_broken_variant_says_broken_not_faster(ledger):
    s, _, v, r = _setup(ledger, m.Verdict.FASTER, 7, 1)
    stats = m.ErrorStats(nan_ref=0, nan_new=80, max_abs=4.77e-7, max_rel=1.1e-6, passed=False)
    ledger.put(
        m.CorrectnessResult(
            session_id=s.id, variant_id=v.id, workload="e2e", passed=False, stats=[stats]
        )
    )
    results = draft_round_summary(ledger, r)["results"]
    assert "BROKEN (NaN 0→80)" in results and "FASTER" not in results


def test_person_may_overrule_the_suggestion(ledger):
    s, _, v, _ = _setup(ledger, m.Verdict.FASTER, 7, 7)
    res = record_residual(ledger, s, v)
    assert res.suggested is R.METRIC_ONLY
    confirm_residual(ledger, res, "opposite_sign", why="the profile shows a slower phase")
    stored = ledger.get(m.Residual, res.id)
    assert stored.suggested is R.METRIC_ONLY and stored.confirmed is R.OPPOSITE_SIGN


def test_round_summary_holds_the_search_round_fields(ledger):
    s, _, v, r = _setup(ledger, m.Verdict.FASTER, 7, 1)
    res = record_residual(ledger, s, v)
    confirm_residual(ledger, res, "as_predicted", confidence="high")
    draft = draft_round_summary(ledger, r)
    assert set(draft) == set(ROUND_SUMMARY_FIELDS)
    assert draft["baseline_id"].startswith("ba5e11000001")
    assert "rm -rf .cache" in draft["reset_procedure"]
    assert "fused" in draft["variants"] and "FASTER" in draft["results"]
    assert "medium → high" in draft["confidence_updates"]
    assert "moved as predicted" in draft["residuals"] and "as_predicted" not in str(draft)
    set_round_summary(ledger, r, next="re-profile with ncu after the fusion lands")
    assert ledger.get(m.Round, r.id).summary["search_round"]["next"].startswith("re-profile")
    assert draft_round_summary(ledger, ledger.get(m.Round, r.id))["next"].startswith("re-profile")
    with pytest.raises(ValueError):
        set_round_summary(ledger, r, bogus="x")


def test_peak_memory_moves_are_explained_in_bytes_units(ledger):
    s = make_session(ledger)
    h, _ = add_hypothesis(
        ledger, s, title="free the workspace early", predicted_evidence="peak memory lower"
    )
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s, hypothesis_id=h.id)
    r = make_round(ledger, s, b, [v])
    make_comparison(ledger, r, v, verdict=m.Verdict.FASTER)
    make_audit(ledger, s, "baseline", launches=3, peak=48 << 20)
    make_audit(ledger, s, v.id, launches=3, peak=16 << 20)
    text = suggest_residual(ledger, s, v).explanation
    assert "48 MiB → 16 MiB" in text and "e+07" not in text
