"""The round's stopping rule (measure.sequential), checked by a fast version of the
simulation in tests/benchmarks/sequential.py: a few hundred rounds per noise model, fixed
seeds, the issue's targets with a margin for the smaller sample."""

from __future__ import annotations

import importlib.util
import math
import random
import sys
from pathlib import Path

import pytest

from measure import sequential, stats
from measure.vocabulary import Verdict

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "sequential.py"
_spec = importlib.util.spec_from_file_location("sequential_benchmark", _PATH)
assert _spec is not None and _spec.loader is not None
sim = importlib.util.module_from_spec(_spec)
sys.modules["sequential_benchmark"] = sim
_spec.loader.exec_module(sim)

ROUNDS = 300


@pytest.mark.parametrize("name", list(sim.MODELS))
def test_few_false_verdicts_and_the_power_under_each_noise_model(name: str) -> None:
    row = sim.simulate(name, sim.MODELS[name], ROUNDS, seed=11)
    # targets: <= 2% false FASTER/SLOWER in A/A; >= 90% power for 5% within 30 blocks
    assert row.aa_false <= 0.03, row
    assert row.aa_measurable <= 0.015, row  # target <= 1%: a false "measurable change"
    assert row.power >= 0.85, row
    assert row.power_median_blocks <= 20, row


def test_the_design_looks_few_times_each_at_a_spent_share_of_the_error() -> None:
    d = sequential.Design.plan(10, 30)
    assert d.looks == (10, 15, 20, 25, 30)
    assert d.confidence == pytest.approx(0.99)
    assert d.change_confidence == pytest.approx(1 - 0.01 / 5)  # MEASURABLE: 1% over 5 looks
    assert sequential.Design.plan(6, 9).looks == (6, 9)
    assert sequential.Design.plan(10, 10).looks == (10,)


def test_peeking_every_block_at_95_percent_errs_more_than_the_design() -> None:
    """On a very noisy machine (20% per block, no effect, band ±2%): stopping at the first
    decisive 95% interval from block 10 on gives false verdicts; the design far fewer."""
    design = sequential.Design.plan(10, 30)
    naive = guarded = 0
    for k in range(300):
        rng = random.Random(500 + k)
        d = [rng.gauss(0, 0.20) for _ in range(30)]
        for n in range(10, 31):
            v = stats.paired_estimate(d[:n], threshold=0.02).verdict
            if v is not Verdict.INCONCLUSIVE:
                naive += v in (Verdict.FASTER, Verdict.SLOWER)
                break
        for look in design.looks:
            got = sequential.judge(d[:look], 0.02, design)
            if got.decided:
                guarded += got.verdict in (Verdict.FASTER, Verdict.SLOWER)
                break
    assert guarded <= 0.02 * 300 and guarded < naive, (guarded, naive)


def test_the_forecast_stays_within_the_limit_as_blocks_come_in() -> None:
    """Near a band edge the old forecast jumped (922, 11268, 44, 20000 blocks); this one is
    bounded by what the round has left and says the smallest effect it can resolve."""
    design = sequential.Design.plan(10, 30)
    rng = random.Random(3)
    d = [math.log(1.02) + rng.gauss(0, 0.03) for _ in range(30)]
    for n in range(10, 30):
        got = sequential.judge(d[:n], 0.02, design)
        if got.decided:
            continue
        assert got.blocks_needed is None or 1 <= got.blocks_needed <= 30 - n
        assert got.min_effect is not None and 0.02 < got.min_effect < 0.2


def test_the_smallest_effect_clears_the_band_by_the_half_width() -> None:
    assert sequential.min_effect(0.02, 0.0) == pytest.approx(0.02)
    assert sequential.min_effect(0.02, math.log(1.03)) == pytest.approx(1.02 * 1.03 - 1)


def test_a_real_change_inside_the_band_is_said_measurable_not_inconclusive() -> None:
    """A 1.8% slowdown against a ±2% band: the old rule could only say INCONCLUSIVE; the
    interval that excludes no change (but not the band) says MEASURABLE, and the round may
    stop on it since its estimate lies inside the band."""
    design = sequential.Design.plan(10, 30)
    rng = random.Random(7)
    d = [math.log(1.018) + rng.gauss(0, 0.004) for _ in range(10)]
    got = sequential.judge(d, 0.02, design)
    assert got.verdict is Verdict.MEASURABLE
    assert got.settled
    assert got.estimate.ci_low is not None and got.estimate.ci_low > 1
    assert got.estimate.ci_high is not None and got.estimate.ci_high > 1.02


def test_a_measurable_change_beyond_the_band_keeps_the_round_going() -> None:
    """Estimate 4% beyond a ±2% band, interval reaching into the band: MEASURABLE, but not
    settled, so a round keeps going for SLOWER (and forecasts the blocks)."""
    design = sequential.Design.plan(10, 30)
    d = [
        math.log(1.04) + x
        for x in (-0.03, 0.03, -0.02, 0.02, -0.01, 0.01, 0.0, 0.025, -0.025, 0.005)
    ]
    got = sequential.judge(d, 0.02, design)
    assert got.verdict is Verdict.MEASURABLE
    assert not got.settled


def test_a_baseline_split_half_keeps_four_answers() -> None:
    """measurable=False (the default: the split-half check) never says MEASURABLE."""
    assert stats.verdict_for(1.005, 1.03, 0.02) is Verdict.INCONCLUSIVE
    assert stats.verdict_for(1.005, 1.03, 0.02, measurable=True) is Verdict.MEASURABLE
    assert stats.verdict_for(0.97, 0.995, 0.02, measurable=True) is Verdict.MEASURABLE
    assert stats.verdict_for(0.99, 1.03, 0.02, measurable=True) is Verdict.INCONCLUSIVE
    assert stats.verdict_for(0.995, 1.015, 0.02, measurable=True) is Verdict.SAME


def test_the_forecast_is_the_normal_model_it_says_inlined_not_another() -> None:
    """_needed inlines NormalDist.cdf (an object per block to the limit cost most of a look):
    on many cases it gives what the model written with NormalDist gives, block for block."""
    import math
    import random
    import statistics
    from types import SimpleNamespace

    def reference(n, ratio, s, threshold, design):  # type: ignore[no-untyped-def]
        x = math.log(ratio)
        a, b = math.log1p(-threshold), math.log1p(threshold)
        z = statistics.NormalDist().inv_cdf(0.5 + design.confidence / 2)
        for later in range(n + 1, design.max_blocks + 1):
            hw = z * s / math.sqrt(later)
            where = statistics.NormalDist(x, s * math.sqrt((later - n) / (n * later)))
            p = where.cdf(a - hw) + (1 - where.cdf(b + hw))
            if a + hw < b - hw:
                p += where.cdf(b - hw) - where.cdf(a + hw)
            if p >= 0.5:
                return later - n
        return None

    rng = random.Random(1)
    design = sequential.Design.plan(10, 200)
    found = 0
    for _ in range(400):
        n, ratio = rng.randint(2, 199), math.exp(rng.gauss(0, 0.05))
        s, threshold = abs(rng.gauss(0, 0.1)) + 1e-4, rng.choice([0.01, 0.02, 0.05])
        est = SimpleNamespace(ratio=ratio)
        want = reference(n, ratio, s, threshold, design)
        assert sequential._needed(n, est, s, threshold, design) == want  # type: ignore[arg-type]
        found += want is not None
    assert 0 < found < 400  # both kinds of answer were tried
