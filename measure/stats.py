"""Paired, rank-based statistics for interleaved rounds.

Per block k a variant and the baseline were run once each, in random order; the block's
difference is d_k = ln(variant / baseline), sign chosen so that d < 0 is always better.
The estimate is the Hodges–Lehmann estimator of d (the median of the Walsh averages
(d_i + d_j) / 2, i <= j), the confidence interval comes from inverting the Wilcoxon
signed-rank test, and both are reported as ratios exp(.). The signed-rank interval is
[W_(C+1), W_(M-C)] over the M = n(n+1)/2 sorted Walsh averages, where C is the largest
count with P(T+ <= C) <= alpha/2 under the null (T+ = the signed-rank statistic); the
null distribution is counted exactly for n <= EXACT_MAX_N and approximated by the normal
distribution (with continuity correction) above.

A baseline's reproducibility (split-half A/A check) compares its first half of runs with
its second half unpaired: the Hodges–Lehmann shift of the log values (median of all
pairwise differences) with the Moses interval, which inverts the Mann–Whitney test the
same way. The runs of a baseline are not paired with anything, so the unpaired test is
the honest one; a drift within the baseline shows up as a shift between the halves.

Pure Python (no numpy or scipy import): a round has tens of blocks, and the statistics
are recomputed after each one.
"""

from __future__ import annotations

import math
import statistics
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

from measure.vocabulary import Verdict

# The four verdicts of the paired statistics (measure.vocabulary spells them).
FASTER = Verdict.FASTER
SLOWER = Verdict.SLOWER
SAME = Verdict.SAME
INCONCLUSIVE = Verdict.INCONCLUSIVE
MEASURABLE = Verdict.MEASURABLE

EXACT_MAX_N = 50  # signed rank: exact null distribution up to this many blocks
EXACT_MAX_MN = 2500  # Mann–Whitney: exact up to this product of the two sizes
BLOCKS_NEEDED_CAP = 10_000  # "more than anyone will run": the estimate sits on a band edge


@dataclass(frozen=True)
class PairedEstimate:
    n: int
    ratio: float | None  # exp(Hodges-Lehmann of d); < 1 means better, whatever the direction
    ci_low: float | None
    ci_high: float | None
    verdict: Verdict  # FASTER, SLOWER, SAME, INCONCLUSIVE (or MEASURABLE when asked for)
    blocks_needed: int | None  # for INCONCLUSIVE: estimated further blocks to decide

    @property
    def decided(self) -> bool:
        return self.verdict != INCONCLUSIVE


# ---------------------------------------------------------------- input preparation


def _usable(x: float) -> bool:
    return math.isfinite(x) and x > 0


def paired_log_ratios(
    baseline: Sequence[float], variant: Sequence[float], higher_is_better: bool = False
) -> list[float]:
    """Per block d = ln(variant / baseline), or ln(baseline / variant) when higher is better.

    A pair of equal values gives d = 0 (two zeros included). Any other pair where a value
    is zero, negative or not finite has no log ratio and is left out: the caller counts
    the blocks it gets back.
    """
    if len(baseline) != len(variant):
        raise ValueError(
            f"baseline and variant need one value per block ({len(baseline)} != {len(variant)})"
        )
    out: list[float] = []
    for b, v in zip(baseline, variant, strict=True):
        if b == v and math.isfinite(b):
            out.append(0.0)
        elif _usable(b) and _usable(v):
            d = math.log(v) - math.log(b)
            out.append(-d if higher_is_better else d)
    return out


def sample_sd(xs: Sequence[float]) -> float:
    """The sample standard deviation in floats (two passes, compensated sums): within an
    ulp or so of statistics.stdev, which sums exact fractions (0.27 ms for 100 blocks, at
    every look of a round: more than the run of a short command)."""
    n = len(xs)
    if n < 2:
        raise statistics.StatisticsError("variance requires at least two data points")
    mean = math.fsum(xs) / n
    return math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))


def _check_args(threshold: float, confidence: float) -> None:
    if not 0 <= threshold < 1:
        raise ValueError(f"the threshold must be in [0, 1), not {threshold}")
    if not 0 < confidence < 1:
        raise ValueError(f"the confidence must be in (0, 1), not {confidence}")


# ---------------------------------------------------------------- null distributions


@cache
def _signed_rank_counts(n: int) -> tuple[int, ...]:
    """The number of subsets of {1..n} with each sum 0..n(n+1)/2: n-1's, with n added (a
    round asks for every n in turn; counting each from scratch was O(n³))."""
    if n <= 0:
        return (1,)
    prev = _signed_rank_counts(n - 1) if n <= 500 else _counts_from_scratch(n - 1)
    counts = [*prev, *([0] * n)]  # the subsets without n; then those with it: sum + n
    for t in range(n, len(counts)):
        counts[t] += prev[t - n]
    return tuple(counts)


def _counts_from_scratch(n: int) -> tuple[int, ...]:
    m = n * (n + 1) // 2
    counts = [0] * (m + 1)
    counts[0] = 1
    top = 0
    for k in range(1, n + 1):
        top += k
        for t in range(top, k - 1, -1):
            counts[t] += counts[t - k]
    return tuple(counts)


@cache
def _signed_rank_cdf(n: int) -> tuple[float, ...]:
    """P(T+ <= t) for t = 0..n(n+1)/2, counted exactly (subsets of {1..n} by sum)."""
    counts = _signed_rank_counts(n)
    total = 2**n
    cdf: list[float] = []
    acc = 0
    for c in counts:
        acc += c
        cdf.append(acc / total)
    return tuple(cdf)


@lru_cache(maxsize=4096)  # asked at every look of every comparison, for the same few n
def signed_rank_critical(n: int, alpha: float) -> int:
    """Largest C with P(T+ <= C) <= alpha/2 under the null; -1 when none exists."""
    if n <= 0:
        return -1
    if n <= EXACT_MAX_N:
        cdf = _signed_rank_cdf(n)
        c = -1
        for t, p in enumerate(cdf):
            if p <= alpha / 2 * (1 + 1e-12):
                c = t
            else:
                break
        return c
    mu = n * (n + 1) / 4
    sigma = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
    return max(-1, math.floor(mu - z * sigma - 0.5))


@cache
def _mann_whitney_cdf(m: int, n: int) -> tuple[float, ...]:
    """P(U <= u) for u = 0..m*n: coefficients of the Gaussian binomial [m+n choose m]_q."""
    size = m * n + 1
    poly = [0] * size
    poly[0] = 1
    for i in range(1, m + 1):
        # multiply by (1 - q^(n+i)), then divide by (1 - q^i): exact in integers
        step = n + i
        for t in range(size - 1, step - 1, -1):
            poly[t] -= poly[t - step]
        for t in range(i, size):
            poly[t] += poly[t - i]
    total = math.comb(m + n, m)
    cdf: list[float] = []
    acc = 0
    for c in poly:
        acc += c
        cdf.append(acc / total)
    return tuple(cdf)


def mann_whitney_critical(m: int, n: int, alpha: float) -> int:
    """Largest C with P(U <= C) <= alpha/2 under the null; -1 when none exists."""
    if m <= 0 or n <= 0:
        return -1
    if m * n <= EXACT_MAX_MN:
        cdf = _mann_whitney_cdf(m, n)
        c = -1
        for u, p in enumerate(cdf):
            if p <= alpha / 2 * (1 + 1e-12):
                c = u
            else:
                break
        return c
    mu = m * n / 2
    sigma = math.sqrt(m * n * (m + n + 1) / 12)
    z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
    return max(-1, math.floor(mu - z * sigma - 0.5))


# ---------------------------------------------------------------- estimators


def walsh_averages(d: Sequence[float]) -> list[float]:
    """Sorted (d_i + d_j) / 2 for all i <= j."""
    return list(_walsh(tuple(d)))


_WALSH_KEPT = 8  # the last few blocks' averages (a round's comparisons, two looks each)
_walsh_kept: dict[tuple[float, ...], tuple[float, ...]] = {}
_walsh_lock = threading.Lock()  # rounds may run in threads of their own (the app)


def _walsh(d: tuple[float, ...]) -> tuple[float, ...]:
    """Sorted Walsh averages; when d is a kept d with more values (a round's later blocks),
    only the averages with a new value are made and merged in: O(k n) additions for k new
    values and one merge in C, instead of n²/2 additions in Python and a sort of them all
    (a round judges at its looks and a few times a second, blocks apart). The figures are
    the same, bit for bit: each average is made with its operands in the same order."""
    n = len(d)
    with _walsh_lock:
        found = _walsh_kept.get(d)
        prev = _walsh_kept.get(d[:-1]) if n > 1 and found is None else None
        if found is None and prev is None:  # the longest kept start of d, if any
            starts = [k for k in _walsh_kept if len(k) < n and d[: len(k)] == k]
            if starts:
                prev = _walsh_kept[max(starts, key=len)]
    if found is not None:
        return found
    if prev is not None:
        m = math.isqrt(8 * len(prev) + 1) // 2  # len(prev) == m (m + 1) / 2
        new = sorted([(d[i] + d[j]) / 2 for j in range(m, n) for i in range(j + 1)])
        merged = tuple(sorted([*prev, *new]))  # two sorted runs: one merge
    else:
        merged = tuple(sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n)))
    with _walsh_lock:
        while len(_walsh_kept) >= _WALSH_KEPT:
            del _walsh_kept[next(iter(_walsh_kept))]  # the oldest
        _walsh_kept[d] = merged
    return merged


def _median_sorted(w: Sequence[float]) -> float:
    """statistics.median of data already sorted (without its copy and sort)."""
    n = len(w)
    if n % 2:
        return float(w[n // 2])
    return float((w[n // 2 - 1] + w[n // 2]) / 2)


def hodges_lehmann(d: Sequence[float]) -> float:
    """One-sample Hodges–Lehmann estimate: the median of the Walsh averages."""
    if not d:
        raise ValueError("no data")
    return float(statistics.median(walsh_averages(d)))


def signed_rank_interval(
    d: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float] | None:
    """(estimate, low, high) in the units of d; None when n is too small for any interval."""
    n = len(d)
    if n == 0:
        return None
    w = _walsh(tuple(d))
    est = _median_sorted(w)
    c = signed_rank_critical(n, 1 - confidence)
    if c < 0:
        return None
    return est, w[c], w[len(w) - 1 - c]


def shift_interval(
    first: Sequence[float], second: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float] | None:
    """Two-sample Hodges–Lehmann shift (second - first) with the Moses (Mann–Whitney) interval."""
    m, n = len(first), len(second)
    if m == 0 or n == 0:
        return None
    diffs = sorted(y - x for x in first for y in second)
    est = float(statistics.median(diffs))
    c = mann_whitney_critical(m, n, 1 - confidence)
    if c < 0:
        return None
    return est, diffs[c], diffs[len(diffs) - 1 - c]


def _min_n_signed_rank(confidence: float) -> int:
    n = 1
    while signed_rank_critical(n, 1 - confidence) < 0:
        n += 1
    return n


def min_paired_blocks(confidence: float) -> int:
    """The fewest paired blocks whose signed-rank interval exists at `confidence`."""
    return _min_n_signed_rank(confidence)


def min_split_runs(confidence: float) -> int:
    """The fewest runs whose two halves can be compared at `confidence` at all."""
    return 2 * _min_half_mann_whitney(confidence)


def _min_half_mann_whitney(confidence: float) -> int:
    h = 1
    while mann_whitney_critical(h, h, 1 - confidence) < 0:
        h += 1
    return h


# ---------------------------------------------------------------- verdicts


def verdict_for(
    ci_low: float | None, ci_high: float | None, threshold: float, measurable: bool = False
) -> Verdict:
    """FASTER / SLOWER / SAME / INCONCLUSIVE for a CI given as ratios; with `measurable`,
    an interval that excludes no change (1) but reaches into the band is MEASURABLE: a real
    change, not shown to be larger than the band (a round's rule; a baseline's split-half
    check keeps the four answers)."""
    if ci_low is None or ci_high is None:
        return INCONCLUSIVE
    lo_edge, hi_edge = 1 - threshold, 1 + threshold
    if ci_high < lo_edge:
        return FASTER
    if ci_low > hi_edge:
        return SLOWER
    if ci_low >= lo_edge and ci_high <= hi_edge:
        return SAME
    if measurable and (ci_high < 1 or ci_low > 1):
        return MEASURABLE
    return INCONCLUSIVE


def more_needed(
    n: int, est: float, low: float, high: float, threshold: float, n_min: int = 1
) -> int | None:
    """How many more observations would decide, in the log units of d.

    Why this is a reasonable guess: a rank-based interval for a location shift narrows
    like 1/sqrt(n) (its half-width is asymptotically z * sigma_HL with sigma_HL
    proportional to 1/sqrt(n), just as for a mean). Keeping the current estimate and the
    current spread, the side of the interval that faces the band edge must shrink from its
    present width h to the gap g between the estimate and that edge, which takes
    n * (h / g)^2 observations. Using the facing side (not a symmetric half-width) copes
    with skewed data. It is a point forecast: when the true effect lies near a band edge
    no number of blocks decides quickly, so the caller still caps rounds at max_blocks.
    None when the estimate sits exactly on a band edge (nothing predicts a decision).
    """
    a, b = math.log1p(-threshold), math.log1p(threshold)
    up, down = high - est, est - low
    if est < a:
        factors = [(up / (a - est)) ** 2]
    elif est > b:
        factors = [(down / (est - b)) ** 2]
    else:
        if est - a <= 0 or b - est <= 0:
            return None
        factors = [(up / (b - est)) ** 2, (down / (est - a)) ** 2]
    needed = math.ceil(n * max(factors) - 1e-9)
    return int(min(max(needed - n, 1, n_min - n), BLOCKS_NEEDED_CAP))


def _spread_guess(d: Sequence[float], confidence: float) -> tuple[float, float] | None:
    """(low, high) around the HL estimate from the standard deviation, for tiny n."""
    if len(d) < 2:
        return None
    est = hodges_lehmann(d)
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    h = z * statistics.stdev(d) / math.sqrt(len(d))
    return est - h, est + h


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def paired_estimate(
    d: Sequence[float], threshold: float = 0.02, confidence: float = 0.95, measurable: bool = False
) -> PairedEstimate:
    """Ratio, confidence interval and verdict from the per-block log ratios d.

    Non-finite entries are left out. With too few blocks for any signed-rank interval at
    this confidence (n <= 5 at 95 %) the verdict is INCONCLUSIVE with no interval, and
    blocks_needed says at least how many more it takes. Ties and zeros need no special
    case: the Walsh-average interval is well defined for them (the exact null
    distribution then is the no-ties one, which is the usual and slightly conservative
    choice), and all-equal data give a zero-width interval at that value.
    """
    _check_args(threshold, confidence)
    xs = [float(x) for x in d if math.isfinite(x)]
    n = len(xs)
    if n == 0:
        return PairedEstimate(0, None, None, None, INCONCLUSIVE, None)
    n_min = _min_n_signed_rank(confidence)
    iv = signed_rank_interval(xs, confidence)
    if iv is None:
        est = hodges_lehmann(xs)
        guess = _spread_guess(xs, confidence)
        at_least = n_min - n
        if guess is not None:
            more = more_needed(n, est, guess[0], guess[1], threshold, n_min)
            at_least = max(at_least, more) if more is not None else at_least
        return PairedEstimate(n, _exp(est), None, None, INCONCLUSIVE, at_least)
    est, low, high = iv
    lo_r, hi_r = _exp(low), _exp(high)
    verdict = verdict_for(lo_r, hi_r, threshold, measurable)
    needed: int | None = None
    if verdict in (INCONCLUSIVE, MEASURABLE):
        needed = more_needed(n, est, low, high, threshold, n_min)
    return PairedEstimate(n, _exp(est), lo_r, hi_r, verdict, needed)


def split_half_check(
    values: Sequence[float],
    threshold: float = 0.02,
    higher_is_better: bool = False,
    confidence: float = 0.95,
) -> PairedEstimate:
    """A/A reproducibility of a baseline: its first half of runs against its second half.

    `values` in the order they were run; with an odd count the middle run is left out,
    as are values that are zero, negative or not finite. ratio = second half / first half
    (inverted when higher is better), from the two-sample Hodges–Lehmann shift of the log
    values, with the Moses interval that inverts the Mann–Whitney test. SAME means
    reproducible within the threshold. `n` counts the runs used, and for INCONCLUSIVE
    `blocks_needed` estimates how many more runs (both halves together) would decide.
    """
    _check_args(threshold, confidence)
    logs = [math.log(v) for v in values if _usable(v)]
    if higher_is_better:
        logs = [-x for x in logs]
    half = len(logs) // 2
    if half == 0:
        return PairedEstimate(0, None, None, None, INCONCLUSIVE, None)
    first, second = logs[:half], logs[len(logs) - half :]
    h_min = _min_half_mann_whitney(confidence)
    iv = shift_interval(first, second, confidence)
    if iv is None:
        est = statistics.median([y - x for x in first for y in second])
        runs = 2 * (h_min - half)
        if half >= 2:
            s = math.sqrt((statistics.variance(first) + statistics.variance(second)) / 2)
            z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
            h = z * s * math.sqrt(2 / half)
            more = more_needed(half, est, est - h, est + h, threshold, h_min)
            if more is not None:
                runs = max(runs, 2 * more)
        return PairedEstimate(2 * half, _exp(est), None, None, INCONCLUSIVE, runs)
    est, low, high = iv
    lo_r, hi_r = _exp(low), _exp(high)
    verdict = verdict_for(lo_r, hi_r, threshold)
    needed: int | None = None
    if verdict == INCONCLUSIVE:
        more = more_needed(half, est, low, high, threshold, h_min)
        needed = None if more is None else 2 * more
    return PairedEstimate(2 * half, _exp(est), lo_r, hi_r, verdict, needed)


# ---------------------------------------------------------------------------- bimodality


@dataclass(frozen=True)
class ModeSplit:
    """Replicate values that fall into two separate groups (a gap test on log values)."""

    low: tuple[int, ...]  # indices into the values given, in the lower mode
    high: tuple[int, ...]
    low_range: tuple[float, float]
    high_range: tuple[float, float]
    gap: float  # log-gap between the modes, over the larger within-mode log spread
    between: tuple[int, ...] = ()  # values in the gap, in neither mode


def mode_split(
    values: Sequence[float],
    min_share: float = 0.2,
    min_gap: float = 0.15,
    ratio: float = 1.5,
    max_between: float = 0.1,
    min_distinct: int = 1,
) -> ModeSplit | None:
    """Two modes, or None: the widest gap between sorted log values must leave at least
    `min_share` of the values (and 2) on each side, be at least `min_gap` in log (×1.16),
    and be `ratio` times wider than the spread inside either mode. A dip-free, unimodal
    spread of noise has no such gap; 11–15 ms against 31–39 ms has one 2.4× its spread.

    Failing that, from 20 values on, up to `max_between` of them may lie in the gap, in
    neither mode, when the gap is twice as clear (2 × `ratio` its modes' spread): a run is
    a median of many calls, and a process that changed speed among its calls lands between.
    The demo's no-op control had 6 runs at 0.38-0.40 ms, 12 at 0.68-0.70 and 2 between
    (a gap 11 times its modes' spread); it read SLOWER, and the gap test that wanted the
    gap empty flagged nothing.

    `min_distinct`: the fewest different values each mode must hold. A figure of a few
    steps (a count, a rounded time) has no spread inside a group to hold a gap against."""
    idx = [i for i, v in enumerate(values) if _usable(v) and v > 0]
    n = len(idx)
    k = max(2, math.ceil(min_share * n))
    if n < 2 * k:
        return None
    order = sorted(idx, key=lambda i: values[i])
    logs = [math.log(values[i]) for i in order]

    def score(lo_end: int, hi_start: int) -> float | None:
        """The gap between order[:lo_end] and order[hi_start:] over their larger spread."""
        gap = logs[hi_start] - logs[lo_end - 1]
        if gap < min_gap:
            return None
        return gap / max(logs[lo_end - 1] - logs[0], logs[-1] - logs[hi_start], 1e-12)

    widest = max(range(k, n - k + 1), key=lambda j: logs[j] - logs[j - 1])
    found = score(widest, widest)
    cut: tuple[int, int] | None = (widest, widest) if found and found >= ratio else None
    # The fewest values between that leave a clear gap: each value moved out of a mode
    # only widens the gap and narrows the mode, so the most allowed would always score best.
    for between in range(1, int(max_between * n) + 1) if cut is None and n >= 20 else ():
        clear = [
            (s, lo_end)
            for lo_end in range(k, n - k - between + 1)
            if (s := score(lo_end, lo_end + between)) is not None and s >= 2 * ratio
        ]
        if clear:
            found, lo_end = max(clear)
            cut = (lo_end, lo_end + between)
            break
    if cut is None or found is None:
        return None
    lo, mid, hi = order[: cut[0]], order[cut[0] : cut[1]], order[cut[1] :]
    if min(len({values[i] for i in lo}), len({values[i] for i in hi})) < min_distinct:
        return None
    return ModeSplit(
        low=tuple(sorted(lo)),
        high=tuple(sorted(hi)),
        low_range=(values[lo[0]], values[lo[-1]]),
        high_range=(values[hi[0]], values[hi[-1]]),
        gap=found,
        between=tuple(sorted(mid)),
    )


def separation(split: ModeSplit, covariate: Sequence[float | None]) -> float | None:
    """How well a covariate (page faults, system time, peak RSS) tells the modes apart: the
    probability that a high-mode run has the larger covariate (Mann–Whitney AUC, ties half).
    1 (or 0): the modes follow it exactly; 0.5: not at all; None without enough values."""
    hi = [covariate[i] for i in split.high if covariate[i] is not None]
    lo = [covariate[i] for i in split.low if covariate[i] is not None]
    if len(hi) < 2 or len(lo) < 2:
        return None
    wins = 0.0
    for a in hi:
        for b in lo:
            assert a is not None and b is not None
            wins += 1.0 if a > b else 0.5 if a == b else 0.0
    return wins / (len(hi) * len(lo))


# ---------------------------------------------------------------------------- noise


def noise(values: Sequence[float]) -> tuple[float, float] | None:
    """Run-to-run noise of replicate values, as fractions: (coefficient of variation,
    median absolute deviation over the median). The CV follows every outlier, the MAD
    ignores them: together they say whether noise is spread or comes in spells."""
    xs = [float(v) for v in values if _usable(v)]
    if len(xs) < 2:
        return None
    mean = statistics.fmean(xs)
    med = statistics.median(xs)
    mad = statistics.median(abs(x - med) for x in xs)
    return statistics.stdev(xs) / mean, mad / med


def narrowest_band(ci_low: float | None, ci_high: float | None) -> float | None:
    """The narrowest noise band within which an interval (as ratios) lies: the threshold
    at which it would read SAME."""
    if ci_low is None or ci_high is None:
        return None
    return max(1.0 - ci_low, ci_high - 1.0, 0.0)
