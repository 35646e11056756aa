"""A residual read from a variant that never gave a value, or that gives wrong results."""

from __future__ import annotations

import pytest
from method_factory import (
    make_baseline,
    make_comparison,
    make_correctness,
    make_round,
    make_session,
    make_variant,
    open_ledger,
)

from session import models as m
from session.residuals import classify, suggest_residual


@pytest.fixture
def ledger(tmp_path):
    with open_ledger(tmp_path) as lg:
        yield lg


def test_a_variant_without_values_is_not_read_as_nothing_moved():
    c = m.Comparison(round_id="r" * 12, variant_id="v" * 12, workload="e2e", n=0)
    s = classify(improve=True, comparisons=[c])
    assert "never measured" in s.explanation and "did not move" not in s.explanation


def test_a_failed_correctness_check_is_part_of_the_reading(ledger):
    s = make_session(ledger)
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s)
    make_comparison(ledger, make_round(ledger, s, b, [v]), v)  # FASTER
    make_correctness(ledger, s, v, passed=False)
    found = suggest_residual(ledger, s, v)
    assert "correctness" in found.explanation and "failed" in found.explanation
