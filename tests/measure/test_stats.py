"""Paired statistics: against scipy.stats, brute force, hand-computed cases, simulations."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from typing import Any

import pytest

from measure import stats as S
from measure.stats import (
    FASTER,
    INCONCLUSIVE,
    SAME,
    SLOWER,
    PairedEstimate,
    paired_estimate,
    paired_log_ratios,
    split_half_check,
)

EPS = 1e-9


# ------------------------------------------------------------------ inputs


def test_paired_log_ratios_directions_and_zeros() -> None:
    d = paired_log_ratios([1.0, 2.0, 4.0], [1.1, 2.0, 2.0])
    assert d == pytest.approx([math.log(1.1), 0.0, math.log(0.5)])
    up = paired_log_ratios([1.0, 2.0, 4.0], [1.1, 2.0, 2.0], higher_is_better=True)
    assert up == pytest.approx([-math.log(1.1), 0.0, -math.log(0.5)])
    # equal zeros give 0; a pair with a zero, a negative or a NaN has no log ratio
    d = paired_log_ratios([0.0, 0.0, 1.0, -1.0, math.nan, 3.0], [0.0, 1.0, 0.0, 1.0, 1.0, 3.0])
    assert d == [0.0, 0.0]
    with pytest.raises(ValueError):
        paired_log_ratios([1.0], [1.0, 2.0])


def test_bad_threshold_or_confidence_raises() -> None:
    with pytest.raises(ValueError):
        paired_estimate([0.0] * 10, threshold=-0.1)
    with pytest.raises(ValueError):
        paired_estimate([0.0] * 10, confidence=1.0)
    with pytest.raises(ValueError):
        split_half_check([1.0] * 10, threshold=1.5)


# ------------------------------------------------------------------ null distributions


def test_signed_rank_critical_values_match_tables() -> None:
    # Two-sided 0.05 critical values of the signed-rank test (standard tables).
    table = {5: -1, 6: 0, 7: 2, 8: 3, 10: 8, 15: 25, 20: 52, 25: 89, 30: 137}
    for n, c in table.items():
        assert S.signed_rank_critical(n, 0.05) == c, n


def test_signed_rank_cdf_brute_force() -> None:
    n = 8
    sums = [
        sum(r for r, sign in zip(range(1, n + 1), signs, strict=True) if sign)
        for signs in itertools.product([0, 1], repeat=n)
    ]
    cdf = S._signed_rank_cdf(n)
    for t in range(n * (n + 1) // 2 + 1):
        assert cdf[t] == pytest.approx(sum(s <= t for s in sums) / 2**n)


def test_mann_whitney_cdf_brute_force_and_hand() -> None:
    m, n = 4, 5
    us = []
    for pos in itertools.combinations(range(m + n), m):  # ranks of the first sample
        us.append(sum(pos) - m * (m - 1) // 2)
    cdf = S._mann_whitney_cdf(m, n)
    for u in range(m * n + 1):
        assert cdf[u] == pytest.approx(sum(x <= u for x in us) / len(us))
    # 5 vs 5 by hand: P(U<=2) = 4/252 <= 0.025 < P(U<=3) = 7/252
    assert S._mann_whitney_cdf(5, 5)[2] == pytest.approx(4 / 252)
    assert S._mann_whitney_cdf(5, 5)[3] == pytest.approx(7 / 252)
    assert S.mann_whitney_critical(5, 5, 0.05) == 2
    assert S.mann_whitney_critical(3, 3, 0.05) == -1


# ------------------------------------------------------------------ estimators


def test_hodges_lehmann_against_brute_force() -> None:
    rng = random.Random(7)
    for n in (1, 2, 3, 9, 20):
        d = [rng.gauss(0, 1) for _ in range(n)]
        walsh = [(d[i] + d[j]) / 2 for i in range(n) for j in range(i, n)]
        assert S.hodges_lehmann(d) == pytest.approx(statistics.median(walsh))
        assert S.walsh_averages(d) == sorted(walsh)


def test_hand_computed_small_case() -> None:
    # n = 6: 21 Walsh averages of 1..6, C = 0, so the interval is [min, max] = [1, 6],
    # and the median Walsh average is 3.5.
    iv = S.signed_rank_interval([1, 2, 3, 4, 5, 6])
    assert iv is not None
    est, lo, hi = iv
    assert (est, lo, hi) == (3.5, 1, 6)
    # n = 7: C = 2, so the interval is the 3rd lowest and 3rd highest Walsh averages.
    d = [0.0, 1, 2, 3, 4, 5, 6]
    w = sorted((d[i] + d[j]) / 2 for i in range(7) for j in range(i, 7))
    iv = S.signed_rank_interval(d)
    assert iv is not None
    est, lo, hi = iv
    assert (lo, hi) == (w[2], w[-3]) == (1.0, 5.0)
    assert est == 3.0


@pytest.fixture(scope="module")
def sps() -> Any:
    """scipy.stats, imported by the tests that use it: at the module's head, every worker
    paid its two seconds of import while collecting."""
    from scipy import stats

    return stats


@pytest.mark.parametrize("n", [6, 7, 10, 16, 25, 40, 50])
def test_signed_rank_interval_ends_match_scipy_exact(n: int, sps: Any) -> None:
    rng = random.Random(100 + n)
    d = [rng.gauss(0.03, 0.05) for _ in range(n)]
    iv = S.signed_rank_interval(d, 0.95)
    assert iv is not None
    est, lo, hi = iv
    assert lo <= est <= hi

    def p(theta: float) -> float:
        return float(sps.wilcoxon([x - theta for x in d], method="exact").pvalue)

    # Just outside the interval the test rejects at 5 %; just inside it does not.
    assert p(lo - EPS) <= 0.05 < p(lo + EPS)
    assert p(hi + EPS) <= 0.05 < p(hi - EPS)


def test_signed_rank_interval_normal_approximation_beyond_exact(sps: Any) -> None:
    n = 80
    rng = random.Random(5)
    d = [rng.gauss(0.0, 0.05) for _ in range(n)]
    iv = S.signed_rank_interval(d, 0.95)
    assert iv is not None
    _, lo, hi = iv

    def p(theta: float) -> float:
        shifted = [x - theta for x in d]
        return float(sps.wilcoxon(shifted, method="approx", correction=True).pvalue)

    assert p(lo - EPS) <= 0.05 < p(lo + EPS)
    assert p(hi + EPS) <= 0.05 < p(hi - EPS)


@pytest.mark.parametrize(("m", "n"), [(5, 5), (8, 8), (10, 12), (30, 30)])
def test_shift_interval_ends_match_scipy_mann_whitney(m: int, n: int, sps: Any) -> None:
    rng = random.Random(m * 100 + n)
    x = [rng.gauss(0.0, 0.05) for _ in range(m)]
    y = [rng.gauss(0.02, 0.05) for _ in range(n)]
    iv = S.shift_interval(x, y, 0.95)
    assert iv is not None
    est, lo, hi = iv
    assert est == pytest.approx(statistics.median([b - a for a in x for b in y]))

    def p(theta: float) -> float:
        shifted = [b - theta for b in y]
        return float(sps.mannwhitneyu(shifted, x, method="exact").pvalue)

    assert p(lo - EPS) <= 0.05 < p(lo + EPS)
    assert p(hi + EPS) <= 0.05 < p(hi - EPS)


# ------------------------------------------------------------------ verdicts


def test_verdict_rules_at_the_band() -> None:
    v = S.verdict_for
    assert v(0.90, 0.97, 0.02) == FASTER
    assert v(1.03, 1.10, 0.02) == SLOWER
    assert v(0.99, 1.01, 0.02) == SAME
    assert v(0.98, 1.02, 0.02) == SAME  # the band's edges are inside it
    assert v(0.97, 1.01, 0.02) == INCONCLUSIVE  # straddles 0.98
    assert v(0.95, 0.99, 0.02) == INCONCLUSIVE  # better, but not clearly beyond the band
    assert v(None, None, 0.02) == INCONCLUSIVE


def test_paired_estimate_hand_cases() -> None:
    slower = paired_estimate([math.log(1.10)] * 10)
    assert slower.verdict == SLOWER
    assert slower.ratio == pytest.approx(1.10)
    assert slower.ci_low == pytest.approx(1.10) and slower.ci_high == pytest.approx(1.10)
    assert slower.blocks_needed is None
    faster = paired_estimate([math.log(0.8)] * 6)
    assert faster.verdict == FASTER
    same = paired_estimate([0.0] * 12)  # all equal: a zero-width interval at 1
    assert same == PairedEstimate(12, 1.0, 1.0, 1.0, SAME, None)


def test_paired_estimate_n0_and_too_few() -> None:
    e = paired_estimate([])
    assert e == PairedEstimate(0, None, None, None, INCONCLUSIVE, None)
    e = paired_estimate([0.1, 0.1, 0.1])
    assert e.verdict == INCONCLUSIVE and e.ci_low is None
    assert e.ratio == pytest.approx(math.exp(0.1))
    assert e.blocks_needed == 3  # 6 blocks are the fewest with a 95 % interval
    e = paired_estimate([math.nan, 0.1])
    assert e.n == 1


def test_ties_and_zeros() -> None:
    d = [0.0, 0.0, 0.0, 0.01, -0.01, 0.0, 0.0, 0.01, 0.0, 0.0]
    e = paired_estimate(d)
    assert e.verdict == SAME
    assert e.ci_low is not None and e.ci_high is not None
    assert e.ci_low <= 1.0 <= e.ci_high


def _quantile_sample(mu: float, sigma: float, n: int) -> list[float]:
    nd = statistics.NormalDist(mu, sigma)
    return [nd.inv_cdf((i + 0.5) / n) for i in range(n)]


def test_blocks_needed_forecast_is_about_right() -> None:
    # Data shaped like a normal sample, so the estimate and spread stay put as n grows.
    mu, sigma = math.log(1.04), 0.03
    e = paired_estimate(_quantile_sample(mu, sigma, 10))
    assert e.verdict == INCONCLUSIVE
    assert e.blocks_needed is not None and e.blocks_needed > 0
    n_more = 10 + e.blocks_needed
    later = paired_estimate(_quantile_sample(mu, sigma, math.ceil(n_more * 1.15)))
    assert later.verdict == SLOWER
    earlier = paired_estimate(_quantile_sample(mu, sigma, math.floor(n_more * 0.7)))
    assert earlier.verdict == INCONCLUSIVE


def test_blocks_needed_when_same_is_close() -> None:
    e = paired_estimate(_quantile_sample(0.0, 0.03, 10))
    assert e.verdict == INCONCLUSIVE and e.blocks_needed is not None
    later = paired_estimate(_quantile_sample(0.0, 0.03, math.ceil((10 + e.blocks_needed) * 1.15)))
    assert later.verdict == SAME


# ------------------------------------------------------------------ simulations


def _interleaved_round(
    rng: random.Random, blocks: int, effect: float, noise: float, drift: float
) -> list[float]:
    """Per-block log ratios of a round whose machine drifts linearly over time."""
    base: list[float] = []
    var: list[float] = []
    slot = 0
    for _ in range(blocks):
        order = rng.sample(["b", "v"], 2)
        for arm in order:
            speed = 1 + drift * slot / (2 * blocks)
            value = speed * math.exp(rng.gauss(0, noise)) * (effect if arm == "v" else 1.0)
            (base if arm == "b" else var).append(value)
            slot += 1
    return paired_log_ratios(base, var)


def test_linear_drift_interleaved_stays_same() -> None:
    rng = random.Random(2024)
    alarms = 0
    sims = 200
    for _ in range(sims):
        d = _interleaved_round(rng, blocks=20, effect=1.0, noise=0.01, drift=0.10)
        if paired_estimate(d).verdict in (FASTER, SLOWER):
            alarms += 1
    assert alarms / sims <= 0.10


def test_linear_drift_not_interleaved_would_alarm() -> None:
    """The contrast that makes the test above meaningful: all A, then all B."""
    rng = random.Random(2025)
    alarms = 0
    for _ in range(50):
        n = 20
        base = [(1 + 0.10 * k / (2 * n)) * math.exp(rng.gauss(0, 0.01)) for k in range(n)]
        var = [(1 + 0.10 * (n + k) / (2 * n)) * math.exp(rng.gauss(0, 0.01)) for k in range(n)]
        if paired_estimate(paired_log_ratios(base, var)).verdict in (FASTER, SLOWER):
            alarms += 1
    assert alarms / 50 > 0.5


def test_one_tenfold_outlier_does_not_flip_the_verdict() -> None:
    rng = random.Random(99)
    for effect in (1.0, 0.9, 1.1):
        expected = {1.0: SAME, 0.9: FASTER, 1.1: SLOWER}[effect]
        kept = 0
        for _ in range(50):
            d = [math.log(effect) + rng.gauss(0, 0.005) for _ in range(20)]
            before = paired_estimate(d).verdict
            d[rng.randrange(20)] = math.log(10.0)  # one run ten times slower
            after = paired_estimate(d).verdict
            assert after in (before, INCONCLUSIVE)
            kept += before == expected and after == expected
        assert kept >= 45, effect


def test_true_five_percent_effect_is_detected() -> None:
    rng = random.Random(5)
    hits = 0
    for _ in range(100):
        d = _interleaved_round(rng, blocks=20, effect=1.05, noise=0.015, drift=0.05)
        hits += paired_estimate(d).verdict == SLOWER
    assert hits >= 90


def test_higher_is_better_effect_reads_faster() -> None:
    rng = random.Random(11)
    base = [100 * math.exp(rng.gauss(0, 0.01)) for _ in range(15)]
    var = [b * 1.10 for b in base]  # 10 % more throughput
    e = paired_estimate(paired_log_ratios(base, var, higher_is_better=True))
    assert e.verdict == FASTER and e.ratio == pytest.approx(1 / 1.10)


# ------------------------------------------------------------------ split half


def test_split_half_reproducible_and_drifting() -> None:
    rng = random.Random(3)
    stable = [1.0 * math.exp(rng.gauss(0, 0.003)) for _ in range(10)]
    e = split_half_check(stable)
    assert e.verdict == SAME and e.n == 10
    drifting = [1.0 + 0.02 * k for k in range(10)]  # warms up: each run 2 % slower
    e = split_half_check(drifting)
    assert e.verdict == SLOWER
    assert e.ratio is not None and e.ratio > 1.05
    assert split_half_check(drifting, higher_is_better=True).verdict == FASTER


def test_split_half_noisy_asks_for_more_runs() -> None:
    rng = random.Random(4)
    noisy = [math.exp(rng.gauss(0, 0.03)) for _ in range(10)]
    e = split_half_check(noisy)
    assert e.verdict == INCONCLUSIVE
    assert e.blocks_needed is not None and e.blocks_needed >= 2


def test_split_half_odd_tiny_and_unusable() -> None:
    # odd count: the middle run is left out
    e = split_half_check([1.0] * 5 + [50.0] + [1.0] * 5)
    assert e.n == 10 and e.verdict == SAME and e.ratio == 1.0
    assert split_half_check([]).verdict == INCONCLUSIVE
    assert split_half_check([1.0]).n == 0
    tiny = split_half_check([1.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # 3 vs 3: no 95 % interval
    assert tiny.verdict == INCONCLUSIVE and tiny.ci_low is None
    assert tiny.blocks_needed == 2
    assert split_half_check([0.0, -1.0, math.inf, 1.0, 1.0]).n == 2


def test_split_half_aa_false_alarms_are_rare() -> None:
    rng = random.Random(8)
    alarms = 0
    for _ in range(200):
        vals = [math.exp(rng.gauss(0, 0.005)) for _ in range(20)]
        alarms += split_half_check(vals).verdict in (FASTER, SLOWER)
    assert alarms / 200 <= 0.08


def test_walsh_averages_grown_block_by_block_are_the_full_computation_bit_for_bit() -> None:
    """A round's next block reuses the last block's sorted averages (only the n new ones
    are made): the interval must be exactly the one computed from scratch."""
    rng = random.Random(7)
    d: list[float] = []
    for _ in range(60):
        d.append(rng.gauss(0.01, 0.05))
        grown = S._walsh(tuple(d))  # the previous length is kept: merged in
        n = len(d)
        full = sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n))
        assert list(grown) == full
        assert len(grown) == n * (n + 1) // 2
    for conf in (0.95, 0.99):
        got = S.signed_rank_interval(d, conf)
        w = sorted((d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d)))
        c = S.signed_rank_critical(len(d), 1 - conf)
        assert got == (statistics.median(w), w[c], w[len(w) - 1 - c])


def test_the_exact_null_counts_grown_from_n_minus_one_are_the_counts_from_scratch() -> None:
    for n in range(0, S.EXACT_MAX_N + 3):
        assert S._signed_rank_counts(n) == S._counts_from_scratch(n), n
        assert sum(S._signed_rank_counts(n)) == 2**n


def test_the_float_standard_deviation_is_statistics_stdev_to_an_ulp_or_so() -> None:
    rng = random.Random(3)
    for n in (2, 3, 10, 100, 400):
        xs = [rng.gauss(0.01, 0.05) for _ in range(n)]
        assert math.isclose(S.sample_sd(xs), statistics.stdev(xs), rel_tol=1e-13)
    assert S.sample_sd([0.5] * 7) == 0.0
    with pytest.raises(statistics.StatisticsError):
        S.sample_sd([1.0])


def test_walsh_averages_extended_blocks_apart_are_the_same_bit_for_bit() -> None:
    """A round judges blocks apart (at looks, a few times a second): the kept averages of
    an earlier start of d are extended by several values, as if made from scratch."""
    import random

    from measure import stats as s

    rng = random.Random(3)
    for _ in range(20):
        s._walsh_kept.clear()
        d = tuple(rng.gauss(0, 1) for _ in range(rng.randint(3, 60)))
        for cut in sorted(rng.sample(range(1, len(d)), min(4, len(d) - 1))):
            s._walsh(d[:cut])
        full = sorted((d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d)))
        assert s._walsh(d) == tuple(full)
        assert len(s._walsh_kept) <= s._WALSH_KEPT
