"""Hypotheses with their append-only history, recall of rejected ones, concern suggestions."""

from __future__ import annotations

import pytest
from method_factory import (
    error_stats,
    make_audit,
    make_correctness,
    make_session,
    make_variant,
    open_ledger,
)

from session import concerns
from session import models as m
from session.edits import EditConflict
from session.errors import GateRefusal
from session.hypotheses import (
    HypothesisError,
    add_hypothesis,
    edit_hypothesis,
    get,
    history,
    set_confidence,
    set_status,
    variant_to_link,
)
from session.preflight import set_answer, set_bottleneck

A = m.ConcernArea


@pytest.fixture
def ledger(tmp_path):
    with open_ledger(tmp_path) as lg:
        yield lg


def test_every_field_of_the_record_is_kept(ledger):
    s = make_session(ledger)
    fields = dict(
        title="fuse bias add into the GEMM epilogue",
        symptom="a 4096x4096 elementwise kernel after each GEMM, 18% of step time",
        mechanism="the GEMM output is written to memory and read straight back",
        preconditions="bias is contiguous; output dtype float32",
        predicted_effect="step time falls by about 15% on the end-to-end workload",
        predicted_direction="lower",
        predicted_evidence="one kernel launch fewer per layer",
        falsifier="a probe that skips the bias add",
        confounders="clock boost differences; controlled by interleaving",
        cost="half a day; low risk",
        confidence="low",
        confidence_update="a launch count that does not drop",
        reopen_when="",
    )
    h, similar = add_hypothesis(ledger, s, **fields)
    assert similar == []
    stored = ledger.get(m.Hypothesis, h.id)
    for name, value in fields.items():
        got = getattr(stored, name)
        assert getattr(got, "value", got) == value, name
    assert history(ledger, stored)[0].field == "created"


def test_status_and_confidence_history_is_append_only(ledger):
    s = make_session(ledger)
    h, _ = add_hypothesis(ledger, s, title="t", mechanism="m")
    first = h
    h = set_confidence(ledger, h, "high", "launch count dropped from 7 to 1")
    h = set_status(ledger, h, "supported", "round 1 FASTER with the predicted launches")
    h = set_status(ledger, h, "weakened", "round 2 on the large shape: SAME")
    # a status changed since `first` was read: that edit is refused, not written over it
    with pytest.raises(EditConflict, match="status is now 'weakened'"):
        set_status(ledger, first, "rejected", "stale", reopen_when="x")
    rows = [
        (e.field, e.from_value, e.to_value, e.why)
        for e in history(ledger, h)
        if e.field in ("status", "confidence")
    ]
    assert rows == [
        ("confidence", "medium", "high", "launch count dropped from 7 to 1"),
        ("status", "proposed", "supported", "round 1 FASTER with the predicted launches"),
        ("status", "supported", "weakened", "round 2 on the large shape: SAME"),
    ]
    count = ledger.query("SELECT COUNT(*) AS n FROM hypothesis_events")[0]["n"]
    set_confidence(ledger, h, "high", "again")  # no change: nothing written
    assert ledger.query("SELECT COUNT(*) AS n FROM hypothesis_events")[0]["n"] == count
    with pytest.raises(HypothesisError):
        set_status(ledger, h, "supported", "   ")


def test_rejection_needs_a_reopening_condition(ledger):
    s = make_session(ledger)
    h, _ = add_hypothesis(ledger, s, title="t")
    with pytest.raises(HypothesisError, match="reopen"):
        set_status(ledger, h, "rejected", "no effect in 3 rounds")
    h = set_status(ledger, h, "rejected", "no effect", reopen_when="a new Triton version")
    assert h.status is m.HypothesisStatus.REJECTED and h.reopen_when == "a new Triton version"


def test_edit_keeps_old_text_in_history_and_refuses_status(ledger):
    s = make_session(ledger)
    h, _ = add_hypothesis(ledger, s, title="t", mechanism="old mechanism")
    h2 = edit_hypothesis(ledger, h, why="the trace says otherwise", mechanism="new mechanism")
    assert ledger.get(m.Hypothesis, h.id).mechanism == "new mechanism" == h2.mechanism
    edits = [
        e for e in history(ledger, h) if e.field == "edited" and e.from_value == "old mechanism"
    ]
    assert edits and edits[0].to_value == "new mechanism" and "trace" in edits[0].why
    with pytest.raises(HypothesisError, match="own command"):
        edit_hypothesis(ledger, h, status="rejected")


def test_similar_rejected_hypotheses_are_recalled_with_reopening_condition(ledger):
    old_session = make_session(ledger, sid="01d5e5510000")
    old, _ = add_hypothesis(
        ledger,
        old_session,
        title="vectorized loads for the layernorm kernel",
        mechanism="128-bit loads halve the memory transactions of layernorm",
    )
    set_status(
        ledger, old, "rejected", "no change", reopen_when="the row length becomes a multiple of 8"
    )
    unrelated, _ = add_hypothesis(ledger, old_session, title="cache the tokenizer output")
    set_status(ledger, unrelated, "rejected", "no change", reopen_when="never")
    s = make_session(ledger, sid="5e5510000002")
    h, similar = add_hypothesis(
        ledger, s, title="wider loads in layernorm", mechanism="vectorized memory transactions"
    )
    assert [x.id for x in similar] == [old.id]
    assert similar[0].reopen_when == "the row length becomes a multiple of 8"
    assert h.id not in [x.id for x in similar]


def test_get_by_prefix(ledger):
    s = make_session(ledger)
    h, _ = add_hypothesis(ledger, s, title="t", id="abc123456789")
    assert get(ledger, "abc1", s).id == h.id
    with pytest.raises(HypothesisError):
        get(ledger, "zzz", s)


# ---------------------------------------------------------------------------- concerns


def test_every_area_has_a_description():
    assert set(concerns.DESCRIPTIONS) == set(m.ConcernArea)
    assert len(concerns.DESCRIPTIONS) == 14
    assert all(len(t) > 30 and "gpu-" not in t for t in concerns.DESCRIPTIONS.values())


@pytest.mark.parametrize(
    ("text", "area"),
    [
        ("reorder the accumulation of partial sums", A.NUMERICAL_SAFETY),
        ("run the backward pass with fewer saved tensors", A.TRAINING_PATH),
        ("reduce peak memory by freeing the workspace early", A.LIFETIME_AND_ALLOCATION),
        ("torch.compile graph break in the attention block", A.COMPILER_AND_RUNTIME),
        ("fuse the transpose into the producer", A.FUSION_AND_LAYOUT),
        ("online softmax", A.REDUCTIONS_AND_SCANS),
        ("raise occupancy by using fewer registers", A.KERNEL_EXECUTION),
        ("large allocation fails from fragmentation", A.VIRTUAL_MEMORY),
        ("offload the optimizer state to host memory", A.TIERING_AND_MIGRATION),
        ("reuse the kv cache across requests", A.STATE_REUSE),
        ("rollback of state across calls", A.PERSISTENT_STATE),
        ("overlap the copy with compute on two streams", A.MEMORY_SCHEDULING),
    ],
)
def test_text_rules(text, area):
    found = {s.area: s.reason for s in concerns.suggest(concerns.Facts(text=text))}
    assert area in found, found


def test_fact_rules_from_the_ledger_are_recorded_on_the_hypothesis(ledger):
    s = make_session(ledger, training=True)
    h, _ = add_hypothesis(ledger, s, title="plain words only")
    # training path from the contract, evidence missing → performance evidence
    assert A.TRAINING_PATH in h.concern_areas and A.PERFORMANCE_EVIDENCE in h.concern_areas
    v = make_variant(ledger, s, hypothesis_id=h.id)
    make_correctness(ledger, s, v, stats=[error_stats()], suggested=m.OptimizationClass.C2)
    make_audit(ledger, s, "baseline", launches=7, peak=200)
    make_audit(ledger, s, v.id, launches=1, peak=100)
    set_answer(ledger, s, "residency", "handed_off", concern_area="tiering_and_migration")
    set_bottleneck(ledger, s, "launch-bound", "7 kernels of 4 µs each")
    _, suggestions = concerns.record_suggestions(ledger, s, h)
    reasons = {x.area: x.reason for x in suggestions}
    assert "C2" in reasons[A.NUMERICAL_SAFETY]
    assert "peak memory changed" in reasons[A.LIFETIME_AND_ALLOCATION]
    assert "200 B → 100 B" in reasons[A.LIFETIME_AND_ALLOCATION]  # sizes in words
    assert "kernel launches changed" in reasons[A.FUSION_AND_LAYOUT]
    assert "residency" in reasons[A.TIERING_AND_MIGRATION]
    assert "launch-bound" in reasons[A.COMPILER_AND_RUNTIME]
    assert "fused" in reasons[A.VALIDATION]
    stored = ledger.get(m.Hypothesis, h.id)
    assert set(reasons) <= set(stored.concern_areas)
    whys = [e.why for e in history(ledger, stored) if "concern areas suggested" in e.why]
    assert whys and "lifetime_and_allocation" not in whys[0]  # labels, not stored values


def test_compiler_generated_kernel_in_a_profile(ledger):
    facts = concerns.Facts(text="", kernel_names=["triton_per_fused_softmax_0"], has_evidence=True)
    found = {s.area for s in concerns.suggest(facts)}
    assert A.COMPILER_AND_RUNTIME in found and A.PERFORMANCE_EVIDENCE not in found


def test_new_evidence_and_residuals_raise_concern_areas(ledger):
    from pathlib import Path

    from method_factory import make_baseline, make_comparison, make_round

    from session.evidence import import_torch_profile
    from session.residuals import record_residual

    s = make_session(ledger)
    h, _ = add_hypothesis(ledger, s, title="plain words only")
    assert A.COMPILER_AND_RUNTIME not in h.concern_areas
    prof = Path(__file__).parent / "data" / "torch_table_cuda.txt"
    text = prof.read_text().replace("ampere_sgemm_128x64_tn", "triton_per_fused_softmax_0")
    (ledger.path.parent / "p.txt").write_text(text)
    import_torch_profile(ledger, s, ledger.path.parent / "p.txt", hypothesis_id=h.id)
    assert A.COMPILER_AND_RUNTIME in ledger.get(m.Hypothesis, h.id).concern_areas
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s, hypothesis_id=h.id)
    make_comparison(ledger, make_round(ledger, s, b, [v]), v)
    make_audit(ledger, s, "baseline", launches=7, peak=200)
    make_audit(ledger, s, v.id, launches=7, peak=100)
    record_residual(ledger, s, v)
    assert A.LIFETIME_AND_ALLOCATION in ledger.get(m.Hypothesis, h.id).concern_areas


def test_a_variant_that_tests_a_hypothesis_is_refused_for_a_new_one_before_it_is_written(ledger):
    s = make_session(ledger)
    first, _ = add_hypothesis(ledger, s, title="fuse the epilogue")
    free = make_variant(ledger, s, name="free", vid="7a1a00000002")
    assert variant_to_link(ledger, s, "free") == free
    make_variant(ledger, s, name="taken", hypothesis_id=first.id)
    with pytest.raises(GateRefusal) as refused:
        variant_to_link(ledger, s, "taken")
    assert refused.value.reasons == [
        f"a variant is one factor: taken already tests hypothesis {first.id}; "
        "make a separate variant for this one"
    ]
    assert [h.id for h in ledger.list(m.Hypothesis, session_id=s.id)] == [first.id]
