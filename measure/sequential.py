"""When a round may stop: a group-sequential design with planned looks.

Looking at the paired statistics after every block and stopping at the first decisive
interval is a sequential test whose error grows with each look. A round therefore looks
only at planned blocks (the minimum, then every LOOK_EVERY blocks, and the block limit)
and judges each look at confidence 1 - ALPHA / K for K planned looks (Bonferroni
spending): whatever the data do between looks, the chance that any look's interval misses
the true ratio is at most ALPHA, so a false FASTER or SLOWER (an interval wholly beyond the
band while the truth is inside it) is rarer still. tests/benchmarks/sequential.py shows the
rates by simulation under several noise models.

The ratio and the 95% interval stay the reported numbers (measure.stats.paired_estimate);
the verdict is this design's. Forecasts come from the noise the interval shows and the
distance of the estimate to the band edge it must clear, allowing for the estimate itself
to move (`_needed`), capped at the block limit; beyond it the words say the smallest
effect the round can resolve instead.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from measure import stats
from measure.vocabulary import Verdict

__all__ = ["ALPHA", "LOOK_EVERY", "Design", "Look", "judge"]

ALPHA = 0.05  # the design's total chance of any interval missing, over all its looks
LOOK_EVERY = 5


@dataclass(frozen=True)
class Design:
    looks: tuple[int, ...]  # the block counts at which the round may stop
    alpha: float = ALPHA

    @classmethod
    def plan(cls, min_blocks: int, max_blocks: int, every: int = LOOK_EVERY) -> Design:
        looks = list(range(min_blocks, max_blocks, max(1, every)))
        if not looks or looks[-1] != max_blocks:
            looks.append(max_blocks)
        return cls(tuple(looks))

    @property
    def confidence(self) -> float:
        return 1 - self.alpha / len(self.looks)

    @property
    def max_blocks(self) -> int:
        return self.looks[-1]

    def is_look(self, blocks: int) -> bool:
        return blocks in self.looks

    def next_look(self, blocks: int) -> int:
        return next((k for k in self.looks if k > blocks), self.max_blocks)


@dataclass(frozen=True)
class Look:
    """One comparison judged at a look: the design's verdict, and what would decide it."""

    verdict: Verdict
    estimate: stats.PairedEstimate  # at the design's confidence
    blocks_needed: int | None  # undecided: more blocks forecast to decide; None past the limit
    min_effect: float | None  # undecided: the smallest effect (fraction) the limit resolves

    @property
    def decided(self) -> bool:
        return self.verdict is not Verdict.INCONCLUSIVE


def judge(d: Sequence[float], threshold: float, design: Design) -> Look:
    """The design's verdict on the per-block log ratios `d`, with its forecast."""
    est = stats.paired_estimate(d, threshold=threshold, confidence=design.confidence)
    if est.decided:
        return Look(est.verdict, est, None, None)
    n = est.n
    h = _half_width(d, est, design.confidence)
    if h is None or n == 0:
        return Look(Verdict.INCONCLUSIVE, est, None, None)
    xs = [x for x in d if math.isfinite(x)]
    spread = statistics.stdev(xs) if len(xs) >= 3 else None
    needed = _needed(n, est, spread, threshold, design)
    h_max = h * math.sqrt(n / max(n, design.max_blocks))
    return Look(Verdict.INCONCLUSIVE, est, needed, min_effect(threshold, h_max))


def min_effect(threshold: float, half_width: float) -> float:
    """The smallest true change (a fraction, e.g. 0.043) an interval of this half-width
    (log units) can call FASTER or SLOWER: it must clear the band edge by the half-width."""
    return math.expm1(math.log1p(threshold) + half_width)


def _half_width(d: Sequence[float], est: stats.PairedEstimate, confidence: float) -> float | None:
    """The interval's half-width in log units; from the standard deviation while n is too
    small for a signed-rank interval."""
    if est.ci_low is not None and est.ci_high is not None:
        return (math.log(est.ci_high) - math.log(est.ci_low)) / 2
    xs = [x for x in d if math.isfinite(x)]
    if len(xs) < 2:
        return None
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    return z * statistics.stdev(xs) / math.sqrt(len(xs))


def _needed(
    n: int, est: stats.PairedEstimate, s: float | None, threshold: float, design: Design
) -> int | None:
    """More blocks until a decision is more likely than not, or None when that takes more
    than the block limit leaves.

    Not the point forecast "keep the estimate, shrink the interval": near a band edge that
    one jumps by thousands of blocks as the estimate moves. The estimate itself moves as
    blocks come in: given the n blocks so far (flat prior), the estimate at n' > n is
    normal around today's with variance s^2 (n' - n) / (n n'), where s is the per-block
    spread the interval shows. A decision at n' needs it beyond a band edge by the
    half-width h' = z s / sqrt(n'), or inside the band by as much.
    """
    if est.ratio is None or s is None or s <= 0:
        return None
    x = math.log(est.ratio)
    a, b = math.log1p(-threshold), math.log1p(threshold)
    z = statistics.NormalDist().inv_cdf(0.5 + design.confidence / 2)
    for later in range(n + 1, design.max_blocks + 1):
        hw = z * s / math.sqrt(later)
        sd = s * math.sqrt((later - n) / (n * later))
        where = statistics.NormalDist(x, sd)
        p = where.cdf(a - hw) + (1 - where.cdf(b + hw))
        if a + hw < b - hw:
            p += where.cdf(b - hw) - where.cdf(a + hw)
        if p >= 0.5:
            return later - n
    return None
