"""A broken variant (its correctness check failed) is never read as "moved as predicted":
its timings are of wrong results, so the target metric was not measured as a valid result
(a new user's walk of `gpuopt demo` found the residual form defaulting to it, and the
record saying so)."""

from __future__ import annotations

import pytest
from method_factory import (
    make_audit,
    make_baseline,
    make_comparison,
    make_correctness,
    make_round,
    make_session,
    make_variant,
    open_ledger,
)

from session import models as m
from session.hypotheses import add_hypothesis
from session.read_model import confirm_residual, load_view, residual_suggestion

R = m.ResidualClass


@pytest.fixture
def ledger(tmp_path):
    with open_ledger(tmp_path) as lg:
        yield lg


def _broken(ledger, launches: int):
    s = make_session(ledger)
    h, _ = add_hypothesis(
        ledger,
        s,
        title="skip the max subtraction",
        predicted_effect="about 10% less time",
        predicted_direction=m.Direction.LOWER,
        predicted_evidence="fewer kernel launches",
    )
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s, hypothesis_id=h.id)
    r = make_round(ledger, s, b, [v])
    make_comparison(ledger, r, v, verdict=m.Verdict.FASTER)
    make_audit(ledger, s, "baseline", launches=7, peak=1)
    make_audit(ledger, s, v.id, launches=launches, peak=1)
    make_correctness(ledger, s, v, passed=False)
    return s, v


@pytest.mark.parametrize(("launches", "expected"), [(1, R.MECHANISM_ONLY), (7, R.NOTHING_MOVED)])
def test_a_broken_variants_suggestion_never_says_the_prediction_held(ledger, launches, expected):
    s, v = _broken(ledger, launches)
    got = residual_suggestion(ledger, load_view(ledger, s.id), v)
    assert got is not None
    cls, why = got
    assert cls not in (R.AS_PREDICTED, R.METRIC_ONLY), why
    assert cls is expected, why
    assert "not measured as a valid result" in why and "correctness check failed" in why


def test_confirming_a_broken_variants_suggestion_records_no_claim_it_held(ledger):
    s, v = _broken(ledger, 1)
    view = load_view(ledger, s.id)
    cls, _ = residual_suggestion(ledger, view, v) or (None, "")
    assert cls is not None
    res = confirm_residual(ledger, view, v, cls, "confirmed by the demo")
    assert res.suggested is not R.AS_PREDICTED and res.confirmed is not R.AS_PREDICTED
