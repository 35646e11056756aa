"""Every gate of the method, refused and passed, on a real ledger file."""

from __future__ import annotations

import pytest
from method_factory import (
    error_stats,
    make_baseline,
    make_comparison,
    make_correctness,
    make_round,
    make_session,
    make_variant,
    measured_variant,
    open_ledger,
)

from session import models as m
from session.dispositions import dispose
from session.gates import GateRefusal, check_round_allowed, require
from session.hypotheses import add_hypothesis, link_variant
from session.preflight import set_answer

GOOD_DEFAULT = dict(
    optimization_class="C2",
    guards=["last dimension <= 4096", "dtype is float32 or bfloat16"],
    fallback="the unfused softmax path",
)


@pytest.fixture
def ledger(tmp_path):
    with open_ledger(tmp_path) as lg:
        yield lg


def refused(fn, *args, **kw) -> str:
    with pytest.raises(GateRefusal) as info:
        fn(*args, **kw)
    return info.value.reason


# ---------------------------------------------------------------------------- round


def test_round_refused_without_baseline(ledger):
    s = make_session(ledger)
    reasons = check_round_allowed(ledger, s)
    assert reasons and "no round before a baseline" in reasons[0]


def test_round_refused_when_baseline_not_judged(ledger):
    s = make_session(ledger)
    make_baseline(ledger, s, m.Reproducibility.UNJUDGED)
    assert "not been judged" in check_round_allowed(ledger, s)[0]


def test_round_refused_when_baseline_drifts_for_a_named_cause(ledger):
    s = make_session(ledger)
    b = make_baseline(ledger, s, m.Reproducibility.NOT_REPRODUCIBLE)
    b.reproducibility_detail = "drifting, with a cause the telemetry names at ±2%; split-half"
    b.outcome = m.Outcome.DRIFT_CAUSED  # stored as a value, as the conduct does
    ledger.put(b)
    reason = check_round_allowed(ledger, s)[0]
    assert "not reproducible: drifting, with a cause" in reason and "split-half" in reason
    assert "lock its clocks" in reason
    with pytest.raises(GateRefusal):
        require(check_round_allowed(ledger, s))


def test_round_allowed_on_a_baseline_drifting_with_no_named_cause(ledger):
    s = make_session(ledger)
    make_baseline(ledger, s, m.Reproducibility.NOT_REPRODUCIBLE)
    assert check_round_allowed(ledger, s) == []


def test_round_allowed_with_reproducible_baseline(ledger):
    s = make_session(ledger)
    make_baseline(ledger, s)
    assert check_round_allowed(ledger, s) == []
    require(check_round_allowed(ledger, s))  # does not raise


# ---------------------------------------------------------------------------- measured first


def test_disposition_refused_without_comparison(ledger):
    s = make_session(ledger)
    make_baseline(ledger, s)
    v = make_variant(ledger, s)
    make_correctness(ledger, s, v)
    reason = refused(dispose, ledger, s, v, "need-evidence", reason="more blocks")
    assert "has a comparison" in reason
    assert ledger.list(m.Disposition, session_id=s.id) == []


def test_disposition_refused_without_correctness(ledger):
    s = make_session(ledger)
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s)
    make_comparison(ledger, make_round(ledger, s, b, [v]), v)
    reason = refused(dispose, ledger, s, v, "reject", reason="x", reopen_when="y")
    assert "correctness result" in reason
    assert "has a comparison" not in reason


def test_disposition_passes_once_measured(ledger):
    s = make_session(ledger)
    _, v, _ = measured_variant(ledger, s)
    d = dispose(ledger, s, v, "need-evidence", reason="wait for the H200 numbers")
    assert ledger.get(m.Disposition, d.id) == d


# ---------------------------------------------------------------------------- keep as default


def test_keep_default_passes_with_everything(ledger):
    s = make_session(ledger)
    _, v, _ = measured_variant(ledger, s)
    d = dispose(ledger, s, v, "keep-default", **GOOD_DEFAULT)
    assert d.choice is m.DispositionChoice.KEEP_DEFAULT
    assert d.guards == GOOD_DEFAULT["guards"]


def test_keep_default_refused_when_correctness_failed(ledger):
    s = make_session(ledger)
    _, v, _ = measured_variant(ledger, s)
    make_correctness(ledger, s, v, passed=False, cid="cfailed00001", minutes=30)
    assert "correctness failed on e2e" in refused(
        dispose, ledger, s, v, "keep-default", **GOOD_DEFAULT
    )


def test_keep_default_refused_when_not_faster(ledger):
    s = make_session(ledger)
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s)
    make_comparison(ledger, make_round(ledger, s, b, [v]), v, verdict=m.Verdict.SAME)
    make_correctness(ledger, s, v, stats=[error_stats()])
    assert "not FASTER" in refused(dispose, ledger, s, v, "keep-default", **GOOD_DEFAULT)


def test_a_measurable_change_is_never_a_win_for_keep_default(ledger):
    """MEASURABLE faster (real, below the band) is not FASTER: no default, no local win."""
    s = make_session(ledger)
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s)
    make_comparison(ledger, make_round(ledger, s, b, [v]), v, verdict=m.Verdict.MEASURABLE)
    make_correctness(ledger, s, v, stats=[error_stats()])
    assert "not FASTER" in refused(dispose, ledger, s, v, "keep-default", **GOOD_DEFAULT)
    assert "must be FASTER" in refused(dispose, ledger, s, v, "keep-local", reason="x")


def test_keep_default_refused_when_slower_somewhere(ledger):
    s = make_session(ledger, scopes=(m.WorkloadScope.END_TO_END, m.WorkloadScope.END_TO_END))
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s)
    r = make_round(ledger, s, b, [v])
    make_comparison(ledger, r, v, workload="w0")
    make_comparison(ledger, r, v, workload="w1", verdict=m.Verdict.SLOWER)
    for w in ("w0", "w1"):
        make_correctness(ledger, s, v, workload=w, stats=[error_stats()])
    assert "SLOWER on w1" in refused(dispose, ledger, s, v, "keep-default", **GOOD_DEFAULT)


def test_keep_default_needs_both_scopes_when_contract_has_both(ledger):
    s = make_session(ledger, scopes=(m.WorkloadScope.ISOLATED, m.WorkloadScope.END_TO_END))
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s)
    r = make_round(ledger, s, b, [v])
    make_comparison(ledger, r, v, workload="w0")  # isolated: FASTER
    make_comparison(ledger, r, v, workload="w1", verdict=m.Verdict.SAME)  # end-to-end: SAME
    for w in ("w0", "w1"):
        make_correctness(ledger, s, v, workload=w, stats=[error_stats()])
    reason = refused(dispose, ledger, s, v, "keep-default", **GOOD_DEFAULT)
    assert "end-to-end workload" in reason and "isolated" not in reason
    # the newer round is FASTER on both: the gate opens
    r2 = make_round(ledger, s, b, [v], rid="40d000000002", number=2)
    make_comparison(ledger, r2, v, workload="w0")
    make_comparison(ledger, r2, v, workload="w1")
    assert dispose(ledger, s, v, "keep-default", **GOOD_DEFAULT).choice.value == "keep-default"


def test_keep_default_needs_error_statistics_for_c2(ledger):
    s = make_session(ledger)
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s)
    make_comparison(ledger, make_round(ledger, s, b, [v]), v)
    make_correctness(ledger, s, v)  # a check command: passed, no statistics
    assert "C2 needs error statistics" in refused(
        dispose, ledger, s, v, "keep-default", **GOOD_DEFAULT
    )
    # NA needs no statistics
    d = dispose(ledger, s, v, "keep-default", **{**GOOD_DEFAULT, "optimization_class": "NA"})
    assert d.optimization_class is m.OptimizationClass.NA


def test_keep_default_needs_a_class(ledger):
    s = make_session(ledger)
    _, v, _ = measured_variant(ledger, s)
    fields = {k: v_ for k, v_ in GOOD_DEFAULT.items() if k != "optimization_class"}
    assert "optimization class" in refused(dispose, ledger, s, v, "keep-default", **fields)


def test_c1_claim_checked_against_statistics(ledger):
    s = make_session(ledger)
    _, v, _ = measured_variant(ledger, s)  # statistics are not bit-identical
    reason = refused(
        dispose, ledger, s, v, "keep-default", **{**GOOD_DEFAULT, "optimization_class": "C1"}
    )
    assert "C1 claims bit-identical" in reason
    make_correctness(
        ledger, s, v, stats=[error_stats(bit_identical=True)], cid="cexact000001", minutes=40
    )
    d = dispose(ledger, s, v, "keep-default", **{**GOOD_DEFAULT, "optimization_class": "C1"})
    assert d.optimization_class is m.OptimizationClass.C1


@pytest.mark.parametrize("cls", ["C3", "C4"])
def test_keep_default_needs_explicit_acceptance_for_c3_c4(ledger, cls):
    s = make_session(ledger)
    _, v, _ = measured_variant(ledger, s)
    fields = {**GOOD_DEFAULT, "optimization_class": cls}
    assert "--accept-semantics" in refused(dispose, ledger, s, v, "keep-default", **fields)
    d = dispose(ledger, s, v, "keep-default", accepted_semantics=True, **fields)
    assert d.accepted_semantics


def test_keep_default_needs_guards_and_fallback(ledger):
    s = make_session(ledger)
    _, v, _ = measured_variant(ledger, s)
    reason = refused(dispose, ledger, s, v, "keep-default", optimization_class="C2", guards=["  "])
    assert "guard conditions" in reason and "fallback" in reason
    reason = refused(
        dispose, ledger, s, v, "keep-default", optimization_class="C2", guards=["n<4096"]
    )
    assert "guard" not in reason and "fallback" in reason


def test_keep_default_needs_gradient_check_on_training_path(ledger):
    s = make_session(ledger, training=True)
    _, v, _ = measured_variant(ledger, s)  # forward statistics only
    assert "gradient check" in refused(dispose, ledger, s, v, "keep-default", **GOOD_DEFAULT)
    make_correctness(
        ledger, s, v, stats=[error_stats(), error_stats("grad:x")], cid="cgrad0000001", minutes=41
    )
    assert dispose(ledger, s, v, "keep-default", **GOOD_DEFAULT).variant_id == v.id


def test_keep_default_refused_with_untrusted_runs(ledger):
    s = make_session(ledger)
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s)
    make_comparison(ledger, make_round(ledger, s, b, [v]), v, untrusted=2)
    make_correctness(ledger, s, v, stats=[error_stats()])
    assert "untrusted runs" in refused(dispose, ledger, s, v, "keep-default", **GOOD_DEFAULT)


def test_keep_default_refused_when_round_lost_the_baseline(ledger):
    s = make_session(ledger)
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s)
    make_comparison(ledger, make_round(ledger, s, b, [v], reproduced=False), v)
    make_correctness(ledger, s, v, stats=[error_stats()])
    assert "did not reproduce the baseline" in refused(
        dispose, ledger, s, v, "keep-default", **GOOD_DEFAULT
    )


def test_refusal_lists_every_unmet_condition(ledger):
    s = make_session(ledger, training=True)
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s)
    make_comparison(ledger, make_round(ledger, s, b, [v]), v, verdict=m.Verdict.SAME, untrusted=1)
    make_correctness(ledger, s, v, passed=False)
    with pytest.raises(GateRefusal) as info:
        dispose(ledger, s, v, "keep-default", optimization_class="C3")
    text = info.value.reason
    for part in (
        "correctness failed",
        "error statistics",
        "--accept-semantics",
        "not FASTER",
        "guard",
        "fallback",
        "gradient check",
        "untrusted",
    ):
        assert part in text, part
    assert len(info.value.reasons) >= 8


# ---------------------------------------------------------------------------- other choices


def test_keep_guarded_needs_guards_and_a_win(ledger):
    s = make_session(ledger)
    _, v, _ = measured_variant(ledger, s)
    assert "guard" in refused(dispose, ledger, s, v, "keep-guarded", optimization_class="C2")
    d = dispose(ledger, s, v, "keep-guarded", **GOOD_DEFAULT)
    assert d.choice is m.DispositionChoice.KEEP_GUARDED


def test_keep_local_needs_a_faster_workload(ledger):
    s = make_session(ledger)
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s)
    make_comparison(ledger, make_round(ledger, s, b, [v]), v, verdict=m.Verdict.SAME)
    make_correctness(ledger, s, v)
    assert "FASTER on at least one" in refused(
        dispose, ledger, s, v, "keep-local", optimization_class="NA"
    )


def test_reject_needs_reason_and_reopening_condition(ledger):
    s = make_session(ledger)
    _, v, _ = measured_variant(ledger, s)
    reason = refused(dispose, ledger, s, v, "reject")
    assert "reason" in reason and "reopening condition" in reason
    assert "reopening condition" in refused(dispose, ledger, s, v, "reject", reason="slower")
    assert "its reason" in refused(dispose, ledger, s, v, "reject", reopen_when="new compiler")
    d = dispose(ledger, s, v, "reject", reason="no gain", reopen_when="the compiler fuses it")
    assert d.reopen_when == "the compiler fuses it"


def test_need_evidence_needs_to_say_which(ledger):
    s = make_session(ledger)
    _, v, _ = measured_variant(ledger, s)
    assert "which evidence" in refused(dispose, ledger, s, v, "need-evidence")


# ---------------------------------------------------------------------------- one factor


def test_second_hypothesis_on_one_variant_refused(ledger):
    s = make_session(ledger)
    h1, _ = add_hypothesis(ledger, s, title="fusion removes a round trip")
    h2, _ = add_hypothesis(ledger, s, title="smaller tiles raise occupancy")
    v = make_variant(ledger, s)
    assert link_variant(ledger, v, h1).hypothesis_id == h1.id
    assert link_variant(ledger, v, h1).hypothesis_id == h1.id  # the same one again is fine
    assert "one factor" in refused(link_variant, ledger, v, h2)
    assert ledger.get(m.Variant, v.id).hypothesis_id == h1.id


# ---------------------------------------------------------------------------- preflight flags


def test_preflight_unknowns_flagged_at_disposition(ledger):
    from session.dispositions import preflight_warnings

    s = make_session(ledger)
    _, v, _ = measured_variant(ledger, s)
    set_answer(ledger, s, "lifetime", "measured", "peak 2.1 GiB at step 3")
    set_answer(ledger, s, "schedule", "unknown")
    warnings = preflight_warnings(ledger, s)
    assert any("schedule" in w for w in warnings)
    assert not any("lifetime" in w for w in warnings)
    d = dispose(ledger, s, v, "keep-default", **GOOD_DEFAULT)
    assert "schedule" in d.open_questions and "lifetime" not in d.open_questions
    assert ledger.get(m.Disposition, d.id).open_questions == d.open_questions


def test_a_probe_is_never_kept(ledger):
    s = make_session(ledger)
    _, v, _ = measured_variant(ledger, s, kind=m.VariantKind.PROBE)
    assert "is a probe" in refused(dispose, ledger, s, v, "keep-default", **GOOD_DEFAULT)
    assert "is a probe" in refused(dispose, ledger, s, v, "keep-local", optimization_class="NA")
    d = dispose(ledger, s, v, "reject", reason="probe done", reopen_when="never needed again")
    assert d.choice is m.DispositionChoice.REJECT
