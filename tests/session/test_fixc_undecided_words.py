"""An INCONCLUSIVE verdict's words are true to what ran (tester: "the smallest effect this
round can resolve is 18.9%" beside an observed 47% in 6 blocks), and its smallest
resolvable effect is stored (Comparison.min_effect)."""

from __future__ import annotations

import math
import random

from measure import sequential, stats
from session.conduct.loop import undecided_words


def _words(d, min_blocks, max_blocks, final=True):
    design = sequential.Design.plan(min_blocks, max_blocks)
    look = sequential.judge(d, 0.02, design)
    shown = stats.paired_estimate(d, threshold=0.02)
    return look, undecided_words(look, shown, design, final)


def test_a_limit_below_what_the_rule_can_decide_says_so_not_a_smallest_effect():
    rng = random.Random(1)
    d = [math.log(0.53) + rng.gauss(0, 0.2) for _ in range(6)]
    look, words = _words(d, 3, 6)
    assert not look.decided
    assert "no verdict is possible within 6 blocks" in words, words
    assert "smallest effect" not in words
    assert "--max-blocks" in words


def test_a_round_stopped_early_says_how_many_blocks_ran():
    rng = random.Random(3)
    d = [math.log(1.01) + rng.gauss(0, 0.05) for _ in range(12)]
    look, words = _words(d, 10, 30)
    assert not look.decided
    assert "not decided in the 12 blocks that ran (of at most 30)" in words, words
