"""A baseline too noisy for its band warns and never blocks a round, nor does one drifting
with no cause the telemetry names; a drift with a named cause blocks; the
words for the outcomes are one set (session.conduct.outcome_words), shown everywhere."""

from __future__ import annotations

import pytest
from method_factory import make_baseline, make_session, open_ledger

from session import conduct
from session import models as m
from session.gates import check_round_allowed
from session.steps import step_states

S = m.StepState


@pytest.fixture
def ledger(tmp_path):
    with open_ledger(tmp_path) as lg:
        yield lg


def _noisy(ledger, s, threshold=0.02):
    b = make_baseline(ledger, s, m.Reproducibility.TOO_NOISY)
    b.threshold = threshold
    b.reproducibility_detail = "too noisy for ±2%"
    ledger.put(b)
    return b


def _states(ledger, s):
    return {st.step: st for st in step_states(ledger, s)}


def test_too_noisy_baseline_does_not_block_a_round(ledger):
    s = make_session(ledger)
    _noisy(ledger, s)
    assert check_round_allowed(ledger, s) == []
    states = _states(ledger, s)
    assert states[m.StepName.BASELINE].state is S.DONE
    assert "too noisy for ±2%" in states[m.StepName.BASELINE].reason
    assert "a round may go on" in states[m.StepName.BASELINE].reason
    assert states[m.StepName.ROUND].state is not S.BLOCKED
    assert "judged reproducible" not in states[m.StepName.ROUND].reason


def test_drifting_baseline_warns_and_the_round_goes_on(ledger):
    s = make_session(ledger)
    make_baseline(ledger, s, m.Reproducibility.NOT_REPRODUCIBLE)  # drifting, no cause named
    assert check_round_allowed(ledger, s) == []
    states = _states(ledger, s)
    want = conduct.outcome_words(conduct.Outcome.DRIFTING, s.contract.threshold)
    assert states[m.StepName.BASELINE].state is S.DONE
    assert want in states[m.StepName.BASELINE].reason
    assert "absolute figures are unreliable" in states[m.StepName.BASELINE].reason
    assert states[m.StepName.ROUND].state is not S.BLOCKED


def test_a_drift_with_a_named_cause_blocks_with_the_same_words(ledger):
    s = make_session(ledger)
    b = make_baseline(ledger, s, m.Reproducibility.NOT_REPRODUCIBLE)
    b.reproducibility_detail = "drifting, with a cause the telemetry names at ±2%; w: drifting"
    b.outcome = m.Outcome.DRIFT_CAUSED  # stored as a value, as the conduct does
    ledger.put(b)
    states = _states(ledger, s)
    want = conduct.outcome_words(conduct.Outcome.DRIFT_CAUSED, s.contract.threshold)
    assert states[m.StepName.BASELINE].state is S.BLOCKED
    assert want in states[m.StepName.BASELINE].reason
    assert states[m.StepName.ROUND].state is S.BLOCKED


def test_stored_fields_round_trip_and_words(ledger):
    s = make_session(ledger)
    b = _noisy(ledger, s, 0.05)
    got = ledger.get(m.Baseline, b.id)
    assert got.reproducibility is m.Reproducibility.TOO_NOISY and got.threshold == 0.05
    assert conduct.baseline_words(got, 0.02) == "too noisy for ±5%"
    c = m.Comparison(round_id="r", variant_id="v", workload="w", n=3, min_effect=0.12)
    assert m.Comparison.model_validate_json(c.model_dump_json()).min_effect == 0.12
    words = {conduct.outcome_words(o, 0.02) for o in conduct.Outcome}
    assert words == {
        "reproducible at ±2%",
        "drifting at ±2% (a warning: its absolute figures are unreliable)",
        "not reproducible: drifting, with a cause the telemetry names at ±2%",
        "too noisy for ±2%",
        "too few runs to judge at ±2%",
        "not reproducible: failing runs",
        "not comparable: zero or negative figures (ratios to them are undefined)",
    }


def test_review_uses_the_outcome_words():
    import inspect

    from tui.screens import review

    src = inspect.getsource(review.session_summary)
    assert "baseline_words(" in src and "words(b.reproducibility)" not in src


def test_rows_without_the_new_fields_stay_readable_by_older_versions():
    # extra="forbid" in an older gpuopt: a null new field would make the row unreadable
    import json

    b = m.Baseline.model_validate_json(
        json.dumps(
            {
                "id": "x",
                "session_id": "s",
                "snapshot": {"id": "a" * 12, "commit": "c" * 40, "ref": "refs/x"},
                "environment": {},
                "contract_hash": "h",
            }
        )
    )
    assert "threshold" not in json.loads(b.model_dump_json())
    c = m.Comparison(round_id="r", variant_id="v", workload="w", n=1)
    assert "min_effect" not in json.loads(c.model_dump_json())
    b.threshold = 0.05
    assert json.loads(b.model_dump_json())["threshold"] == 0.05


def test_too_few_runs_warn_with_the_runs_to_record(ledger):
    s = make_session(ledger)
    b = _noisy(ledger, s)
    b.reproducibility_detail = "too few runs to judge at ±2%"
    b.outcome = m.Outcome.TOO_FEW  # stored as a value, as the conduct does
    ledger.put(b)
    st = _states(ledger, s)[m.StepName.BASELINE]
    assert st.state is S.DONE and "too few runs to judge at ±2%" in st.reason
    assert "a round may go on" in st.reason and check_round_allowed(ledger, s) == []
