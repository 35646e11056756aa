"""When a round may stop: a group-sequential design with planned looks.

Looking at the paired statistics after every block and stopping at the first decisive
interval is a sequential test whose error grows with each look. A round therefore looks
only at planned blocks (the minimum, then every LOOK_EVERY blocks, and the block limit)
and judges each look at confidence 1 - ALPHA / K for K planned looks (Bonferroni
spending): whatever the data do between looks, the chance that any look's interval misses
the true ratio is at most ALPHA, so a false FASTER or SLOWER (an interval wholly beyond the
band while the truth is inside it) is rarer still. tests/benchmarks/sequential.py shows the
rates by simulation under several noise models.

Five answers (measure.stats.verdict_for): FASTER or SLOWER when the design's interval lies
beyond the band, SAME when it lies inside it; otherwise MEASURABLE when a wider interval
(1 - ALPHA_CHANGE / K) excludes no change (a real change not shown to matter), else
INCONCLUSIVE. The interval that decided is the one to show (`Look.interval`), labelled with
its confidence (`Look.confidence`): read by the same rule, it gives the same answer.
A MEASURABLE look ends the round only when its estimate lies inside the band ("1.8% slower,
real, below the band"); one whose estimate lies beyond it keeps going for FASTER/SLOWER and
is MEASURABLE at the end if no more is shown. Forecasts come from the noise the interval
shows and the distance of the estimate to the band edge it must clear, allowing for the
estimate itself to move (`_needed`), capped at the block limit; beyond it the words say the
smallest effect the round can resolve instead.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from measure import stats
from measure.vocabulary import Verdict

__all__ = ["ALPHA", "ALPHA_CHANGE", "LOOK_EVERY", "Design", "Look", "inside_band", "judge"]

ALPHA = 0.05  # the design's total chance of any interval missing, over all its looks
# "A measurable change" claims less than FASTER/SLOWER (only that the ratio is not 1), so a
# false one is easier: at ALPHA over five looks an A/A round said it 2-3% of the time
# (simulated). It is judged on a wider interval, spending 1% over the looks.
ALPHA_CHANGE = 0.01
LOOK_EVERY = 5


@dataclass(frozen=True)
class Design:
    looks: tuple[int, ...]  # the block counts at which the round may stop
    alpha: float = ALPHA
    alpha_change: float = ALPHA_CHANGE

    @classmethod
    def plan(cls, min_blocks: int, max_blocks: int, every: int = LOOK_EVERY) -> Design:
        looks = list(range(min_blocks, max_blocks, max(1, every)))
        if not looks or looks[-1] != max_blocks:
            looks.append(max_blocks)
        return cls(tuple(looks))

    @property
    def confidence(self) -> float:
        """Each look's interval for FASTER, SLOWER and SAME."""
        return 1 - self.alpha / len(self.looks)

    @property
    def change_confidence(self) -> float:
        """Each look's interval for MEASURABLE (and so for INCONCLUSIVE: no change not
        excluded): wider than `confidence`."""
        return 1 - min(self.alpha, self.alpha_change) / len(self.looks)

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
    threshold: float = 0.0  # the band the look was judged against
    # The interval that decided the verdict, to be shown with `confidence`: the design's
    # for FASTER, SLOWER and SAME; the wider change interval for MEASURABLE and INCONCLUSIVE
    # (the design's while there are too few blocks for the wider one).
    shown: stats.PairedEstimate | None = None
    confidence: float | None = None

    @property
    def interval(self) -> stats.PairedEstimate:
        return self.shown or self.estimate

    @property
    def decided(self) -> bool:
        """An answer was given (MEASURABLE included); see `settled` for stopping."""
        return self.verdict is not Verdict.INCONCLUSIVE

    @property
    def settled(self) -> bool:
        """Nothing more to wait for: FASTER, SLOWER, SAME, or MEASURABLE whose estimate lies
        inside the band (one beyond it may still clear the band with more blocks)."""
        if self.verdict is Verdict.MEASURABLE:
            return inside_band(self.estimate.ratio, self.threshold)
        return self.decided


def inside_band(ratio: float | None, threshold: float) -> bool:
    """Whether a ratio lies within [1 - threshold, 1 + threshold]."""
    return ratio is not None and 1 - threshold <= ratio <= 1 + threshold


_BAND_ANSWERS = (Verdict.FASTER, Verdict.SLOWER, Verdict.SAME)


def judge(d: Sequence[float], threshold: float, design: Design) -> Look:
    """The design's verdict on the per-block log ratios `d`, with its forecast."""
    conf = design.confidence
    est = stats.paired_estimate(d, threshold=threshold, confidence=conf)
    if est.verdict in _BAND_ANSWERS:
        return Look(est.verdict, est, None, None, threshold, est, conf)
    wide_conf = design.change_confidence
    wide = stats.paired_estimate(d, threshold=threshold, confidence=wide_conf, measurable=True)
    verdict = Verdict.MEASURABLE if wide.verdict is Verdict.MEASURABLE else Verdict.INCONCLUSIVE
    shown, shown_conf = (wide, wide_conf) if wide.ci_low is not None else (est, conf)
    if verdict is Verdict.MEASURABLE and inside_band(est.ratio, threshold):
        return Look(verdict, est, None, None, threshold, shown, shown_conf)
    n = est.n
    h = _half_width(d, est, conf)
    if h is None or n == 0:
        return Look(verdict, est, None, None, threshold, shown, shown_conf)
    xs = [x for x in d if math.isfinite(x)]
    spread = stats.sample_sd(xs) if len(xs) >= 3 else None
    needed = _needed(n, est, spread, threshold, design)
    h_max = h * math.sqrt(n / max(n, design.max_blocks))
    return Look(verdict, est, needed, min_effect(threshold, h_max), threshold, shown, shown_conf)


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
    return z * stats.sample_sd(xs) / math.sqrt(len(xs))


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
    erf, sqrt = math.erf, math.sqrt
    for later in range(n + 1, design.max_blocks + 1):
        hw = z * s / sqrt(later)
        k = s * sqrt((later - n) / (n * later)) * _SQRT2
        # NormalDist(x, sd).cdf(v) is 0.5 * (1 + erf((v - x) / (sd * sqrt 2))), inlined: an
        # object a block to the limit was most of a look's cost at a limit of 500
        p = 0.5 * (1.0 + erf((a - hw - x) / k)) + (1 - 0.5 * (1.0 + erf((b + hw - x) / k)))
        if a + hw < b - hw:
            p += 0.5 * (1.0 + erf((b - hw - x) / k)) - 0.5 * (1.0 + erf((a + hw - x) / k))
        if p >= 0.5:
            return later - n
    return None


_SQRT2 = math.sqrt(2.0)
