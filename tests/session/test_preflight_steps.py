"""The preflight (questions, checklist, bottleneck) and the eight step states."""

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
    open_ledger,
)
from pydantic import ValidationError

from session import models as m
from session import preflight as pf
from session.dispositions import dispose
from session.evidence import add_measurement
from session.hypotheses import add_hypothesis
from session.residuals import confirm_residual, record_residual
from session.steps import step_states

S = m.StepState


@pytest.fixture
def ledger(tmp_path):
    with open_ledger(tmp_path) as lg:
        yield lg


def test_texts_cover_every_question_and_item():
    assert set(pf.QUESTIONS) == set(m.PreflightQuestion)
    assert sorted(pf.CHECKLIST) == list(range(1, 15))
    assert set(pf.BOTTLENECKS) == set(m.BottleneckClass)
    assert all(t.endswith("?") for t in pf.QUESTIONS.values())


def test_answers_of_each_kind(ledger):
    s = make_session(ledger)
    e = add_measurement(ledger, s, "peak", 2.1, "GiB")
    pf.set_answer(ledger, s, "lifetime", "measured", evidence_id=e.id)
    pf.set_answer(ledger, s, "residency", "handed_off", concern_area="tiering_and_migration")
    pf.set_answer(ledger, s, "identity", "not_applicable", "no state is reused")
    pf.set_answer(ledger, s, "schedule", "unknown")
    view = pf.view(ledger, s)
    kinds = {a.question.value: a.kind.value for a in view.answers}
    assert kinds == {
        "lifetime": "measured",
        "backing": "unknown",
        "residency": "handed_off",
        "identity": "not_applicable",
        "mutation": "unknown",
        "schedule": "unknown",
    }
    assert view.unknown == ["backing", "mutation", "schedule"]
    assert view.as_dict()["questions"][0]["evidence_id"] == e.id
    # replacing an answer keeps one row per question
    pf.set_answer(ledger, s, "schedule", "measured", "copies overlap compute on stream 2")
    assert len(ledger.list(m.PreflightAnswer, session_id=s.id)) == 4


def test_incomplete_answers_are_refused(ledger):
    s = make_session(ledger)
    with pytest.raises(ValidationError, match="concern area"):
        pf.set_answer(ledger, s, "residency", "handed_off")
    with pytest.raises(ValidationError, match="why"):
        pf.set_answer(ledger, s, "identity", "not_applicable", "  ")
    with pytest.raises(ValidationError, match="evidence"):
        pf.set_answer(ledger, s, "lifetime", "measured")
    with pytest.raises(pf.PreflightError, match="no evidence"):
        pf.set_answer(ledger, s, "lifetime", "measured", evidence_id="nope")
    assert ledger.list(m.PreflightAnswer, session_id=s.id) == []


def test_checklist_and_bottleneck(ledger):
    s = make_session(ledger)
    pf.set_checklist(ledger, s, 3, True, "runtime 1.25 s, 57 launches, peak 2.1 GiB")
    pf.set_checklist(ledger, s, 3, False)  # the note stays
    pf.set_checklist(ledger, s, 14, True)
    items = {c.number: c for c in pf.checklist(ledger, s)}
    assert len(items) == 14
    assert not items[3].done and items[3].note.startswith("runtime")
    assert items[14].done and not items[1].done
    with pytest.raises(pf.PreflightError):
        pf.set_checklist(ledger, s, 15, True)
    with pytest.raises(pf.PreflightError, match="evidence"):
        pf.set_bottleneck(ledger, s, "launch-bound", "")
    pf.set_bottleneck(ledger, s, "launch-bound", "57 kernels averaging 4 µs")
    stored = ledger.get(m.Session, s.id)
    assert stored.bottleneck is m.BottleneckClass.LAUNCH_BOUND
    assert stored.contract == s.contract  # the rest of the session is untouched


def _states(ledger, s):
    return {x.step.value: (x.state, x.reason) for x in step_states(ledger, s)}


def test_step_states_follow_the_ledger(ledger):
    s = make_session(ledger, check=None)
    st = _states(ledger, s)
    assert list(st) == [x.value for x in m.StepName]
    assert st["contract"][0] is S.IN_PROGRESS and "correctness check" in st["contract"][1]
    assert st["baseline"][0] is S.NOT_STARTED
    assert st["round"][0] is S.BLOCKED and "baseline" in st["round"][1]
    assert all(st[k][0] is S.NOT_STARTED for k in ("preflight", "hypotheses", "results", "record"))

    s = make_session(ledger, sid="5e5510000009")
    b = make_baseline(ledger, s, m.Reproducibility.NOT_REPRODUCIBLE, bid="ba5e11000009")
    b.reproducibility_detail = "drifting, with a cause the telemetry names at ±2%"
    b.outcome = m.Outcome.DRIFT_CAUSED  # stored as a value, as the conduct does
    ledger.put(b)
    st = _states(ledger, s)
    assert st["contract"][0] is S.DONE
    assert st["baseline"][0] is S.BLOCKED and "not reproducible" in st["baseline"][1]
    assert st["round"][0] is S.BLOCKED and "not reproducible: drifting" in st["round"][1]

    b = make_baseline(ledger, s, bid="ba5e1100000a")
    b.created_at = b.created_at.replace(year=2027)
    ledger.put(b)
    pf.set_answer(ledger, s, "lifetime", "measured", "peak at step 3")
    st = _states(ledger, s)
    assert st["baseline"][0] is S.DONE
    assert st["preflight"][0] is S.IN_PROGRESS and "backing" in st["preflight"][1]
    assert st["round"] == (S.NOT_STARTED, "no variant yet")
    for q in ("backing", "residency", "identity", "mutation"):
        pf.set_answer(ledger, s, q, "not_applicable", "single kernel, no state")
    pf.set_answer(ledger, s, "schedule", "unknown")
    pf.set_bottleneck(ledger, s, "bandwidth-bound", "dram throughput 88% of peak")
    st = _states(ledger, s)
    assert st["preflight"][0] is S.DONE and "schedule" in st["preflight"][1]

    h, _ = add_hypothesis(ledger, s, title="fusion")
    assert _states(ledger, s)["hypotheses"][0] is S.IN_PROGRESS
    from session.hypotheses import edit_hypothesis

    edit_hypothesis(ledger, h, symptom="s", mechanism="m", predicted_effect="p", falsifier="f")
    assert _states(ledger, s)["hypotheses"][0] is S.DONE

    v = make_variant(ledger, s, hypothesis_id=h.id)
    r = make_round(ledger, s, b, [v])
    r.status = m.RoundStatus.RUNNING
    ledger.put(r)
    assert _states(ledger, s)["round"][0] is S.IN_PROGRESS
    r.status = m.RoundStatus.COMPLETED
    ledger.put(r)
    make_comparison(ledger, r, v)
    st = _states(ledger, s)
    assert st["round"][0] is S.DONE
    assert st["results"][0] is S.IN_PROGRESS and "fused" in st["results"][1]
    assert st["disposition"][0] is S.BLOCKED and "correctness" in st["disposition"][1]

    make_correctness(ledger, s, v, stats=[error_stats()])
    confirm_residual(ledger, record_residual(ledger, s, v), "metric_only")
    st = _states(ledger, s)
    assert st["results"][0] is S.DONE
    assert st["disposition"][0] is S.NOT_STARTED and st["record"][0] is S.NOT_STARTED

    dispose(ledger, s, v, "need-evidence", reason="no audit yet")
    st = _states(ledger, s)
    assert st["disposition"][0] is S.DONE and st["record"][0] is S.DONE


def test_an_untrusted_round_is_never_done(ledger):
    """Issue 12 item 5: a round whose baseline check failed is not ✓ in the rail (round and
    results), and its next step is to record the baseline again and re-run the round."""
    s = make_session(ledger)
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s)
    r = make_round(ledger, s, b, [v], reproduced=False)
    make_comparison(ledger, r, v)
    st = _states(ledger, s)
    for step in ("round", "results"):
        state, why = st[step]
        assert state is not S.DONE, (step, why)
        assert "untrusted (baseline not reproduced)" in why, why
        assert f"record the baseline again (gpuopt baseline {s.id})" in why, why
        assert f"re-run the round (gpuopt round {s.id})" in why, why
