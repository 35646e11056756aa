"""Block order, stopping rule and ETA."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from measure.schedule import (
    STOP_BUDGET,
    STOP_DECIDED,
    STOP_MAX_BLOCKS,
    block_order,
    eta_s,
    stop_reason,
)
from measure.stats import PairedEstimate
from measure.vocabulary import Verdict

DONE = PairedEstimate(12, 0.9, 0.85, 0.95, Verdict.FASTER, None)
SAME = PairedEstimate(12, 1.0, 0.99, 1.01, Verdict.SAME, None)


def _open(needed: int | None) -> PairedEstimate:
    return PairedEstimate(12, 0.99, 0.95, 1.03, Verdict.INCONCLUSIVE, needed)


def test_block_order_is_a_permutation_and_random() -> None:
    rng = random.Random(1)
    arms = ["baseline", "a", "b"]
    orders = [tuple(block_order(arms, rng)) for _ in range(600)]
    assert all(sorted(o) == sorted(arms) for o in orders)
    counts = Counter(orders)
    assert len(counts) == 6  # every order shows up
    assert min(counts.values()) > 60  # roughly uniform (100 expected each)
    firsts = Counter(o[0] for o in orders)
    assert all(150 < firsts[a] < 250 for a in arms)
    assert arms == ["baseline", "a", "b"]  # the input is not shuffled in place


def test_block_order_reproducible_from_seed() -> None:
    arms = ["baseline", "x", "y", "z"]
    a = [block_order(arms, random.Random(42)) for _ in range(3)]
    r1, r2 = random.Random(7), random.Random(7)
    assert [block_order(arms, r1) for _ in range(5)] == [block_order(arms, r2) for _ in range(5)]
    assert a[0] == a[1]


def test_stop_when_decided_after_min_blocks() -> None:
    assert stop_reason([DONE, SAME], 9, 10, 30, 5.0, None) is None
    assert stop_reason([DONE, SAME], 10, 10, 30, 5.0, None) == STOP_DECIDED
    assert stop_reason([DONE, _open(3)], 10, 10, 30, 5.0, None) is None
    assert stop_reason([], 10, 10, 30, 5.0, None) == STOP_DECIDED


def test_stop_at_max_blocks() -> None:
    assert stop_reason([_open(50)], 29, 10, 30, 5.0, None) is None
    assert stop_reason([_open(50)], 30, 10, 30, 5.0, None) == STOP_MAX_BLOCKS
    # decided wins as the reason when both hold
    assert stop_reason([DONE], 30, 10, 30, 5.0, None) == STOP_DECIDED


def test_stop_before_the_budget_is_exceeded() -> None:
    # 10 blocks in 50 s: 5 s a block. 54 s spent of 60: one more would end at 59 s.
    assert stop_reason([_open(5)], 10, 10, 30, 54.0, 60.0) is None
    # 56 s spent: one more would end at 61.6 s, past the budget.
    assert stop_reason([_open(5)], 10, 10, 30, 56.0, 60.0) == STOP_BUDGET
    assert stop_reason([_open(5)], 0, 10, 30, 61.0, 60.0) == STOP_BUDGET
    # the budget also cuts below min_blocks: it is the person's limit
    assert stop_reason([_open(5)], 3, 10, 30, 50.0, 60.0) == STOP_BUDGET
    assert stop_reason([_open(5)], 3, 10, 30, 50.0, None) is None


def test_eta() -> None:
    assert eta_s(0, 30, 0.0, [_open(5)]) is None
    # 10 blocks in 20 s: 2 s a block; the slowest undecided comparison needs 6 more
    assert eta_s(10, 30, 20.0, [_open(6), _open(2), DONE]) == pytest.approx(12.0)
    # capped by the block limit
    assert eta_s(10, 12, 20.0, [_open(6)]) == pytest.approx(4.0)
    # no forecast: the rest of the blocks
    assert eta_s(10, 30, 20.0, [_open(None)]) == pytest.approx(40.0)
    # everything decided, but min_blocks not reached yet
    assert eta_s(4, 30, 8.0, [DONE], min_blocks=10) == pytest.approx(12.0)
    assert eta_s(12, 30, 24.0, [DONE, SAME], min_blocks=10) == 0.0
    assert eta_s(4, 30, 8.0, [], min_blocks=10) == pytest.approx(12.0)


def test_adaptive_loop_stops_early_for_a_clear_effect() -> None:
    """Schedule and statistics together: a clear 10 % effect stops at min_blocks."""
    import math

    from measure.stats import paired_estimate

    rng = random.Random(3)
    d: list[float] = []
    blocks = 0
    reason = None
    while reason is None:
        d.append(math.log(1.10) + rng.gauss(0, 0.01))
        blocks += 1
        reason = stop_reason([paired_estimate(d)], blocks, 10, 30, blocks * 1.0, None)
    assert (reason, blocks) == (STOP_DECIDED, 10)


def _adaptive_round(rng: random.Random, effect: float, sd: float) -> tuple[str, int]:
    import math

    from measure.stats import paired_estimate

    d: list[float] = []
    while True:
        d.append(math.log(effect) + rng.gauss(0, sd))
        e = paired_estimate(d)
        if stop_reason([e], len(d), 10, 30, float(len(d)), None) is not None:
            return e.verdict, len(d)


def test_adaptive_stopping_keeps_aa_false_alarms_low() -> None:
    """Looking after every block from 10 to 30 inflates false alarms; the 2 % band keeps
    them under 5 % while the per-block noise (sd of the log ratio) stays at or below 10 %."""
    rng = random.Random(12)
    for sd in (0.02, 0.10):
        verdicts = [_adaptive_round(rng, 1.0, sd)[0] for _ in range(200)]
        alarms = sum(v in ("FASTER", "SLOWER") for v in verdicts)
        assert alarms / len(verdicts) <= 0.05, sd
    # With little noise an A/A round ends SAME, at the first look.
    same = [_adaptive_round(rng, 1.0, 0.005) for _ in range(50)]
    assert all(v == "SAME" and n == 10 for v, n in same)


def test_adaptive_power_for_a_five_percent_effect() -> None:
    rng = random.Random(13)
    runs = [_adaptive_round(rng, 1.05, 0.03) for _ in range(100)]
    hits = [n for v, n in runs if v == "SLOWER"]
    assert len(hits) >= 90
    assert sorted(hits)[len(hits) // 2] <= 15


def test_budget_forecast_leaves_out_the_time_before_the_first_block() -> None:
    # 10 s of setup and checks, then one 1 s block: another block fits a 20 s budget.
    assert stop_reason([], 1, 10, 30, 11.0, 20.0, overhead_s=10.0) is None
    # counted as if each block cost 11 s, it would have stopped
    assert stop_reason([], 1, 10, 30, 11.0, 20.0) == "budget"
    # the overhead still counts against the budget itself
    assert stop_reason([], 1, 10, 30, 20.5, 20.0, overhead_s=19.0) == "budget"
