"""The round's stopping rule by simulation: error rates shown, not hoped for.

    .venv/bin/python tests/benchmarks/sequential.py [--rounds 10000] [--seed 1]

Each simulated round is what the engine does (session.conduct.loop): per block the
baseline and the variant run once each in a random order, d = ln(variant / baseline), and
the verdict of measure.sequential is read at the design's looks (10, 15, 20, 25, 30 blocks),
stopping at the first decided one. Per-block noise: sd of d = 3% (each run 3%/sqrt 2).

Noise models, per run:
- gaussian: normal noise;
- student-t(3): heavy tails, scaled to the same sd;
- slow drift: the machine slows by 10% over the round, with a slow wave of +-3% (period
  20 runs) on top of the Gaussian noise: the arm that runs second in a block pays for it;
- slow spells: bimodal, a run falls into a "slow spell" (15% slower) that lasts a few
  seconds (on average 6 runs), entered at 3% per run, on top of the Gaussian noise.

Printed per model: the A/A false FASTER/SLOWER rate (target <= 2% at a band of 2%), the
A/A rate of a false "measurable change" (MEASURABLE: target <= 1%), how often a real 1.5%
change (inside the band) is found MEASURABLE, the
power for a 5% change (target >= 90% within 30 blocks), the median blocks to a verdict,
the forecast made at block 10 against the blocks actually needed (median absolute error,
and how often "not decidable within 30" was right), and the per-round baseline check's
false-alarm rate when nothing changed (new rule: the Moses interval of round vs
reference beyond the band; old rule: the median ratio beyond the band).

Then the baseline's split-half check (session.conduct.baseline, the defaults: 10 to 30 runs
at ±2%) under the same noise models: how often it ends reproducible, too noisy or
drifting when nothing drifts, and how often it catches a real 6% drift.

Not a pytest module; tests/measure/test_sequential_rule.py runs a few hundred rounds.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from measure import sequential, stats
from session.conduct import baseline as baseline_rule

THRESHOLD = 0.02
BLOCK_SD = 0.03  # sd of the per-block log ratio d
MIN_BLOCKS, MAX_BLOCKS = 10, 30
SMALL_EFFECT = 1.015  # a real change inside the ±2% band
RUN_SD = BLOCK_SD / math.sqrt(2)

# A model yields the log noise of successive runs (a round's runs, in time order).
Model = Callable[[random.Random], Iterator[float]]


def gaussian(rng: random.Random) -> Iterator[float]:
    while True:
        yield rng.gauss(0, RUN_SD)


def student_t(rng: random.Random) -> Iterator[float]:
    scale = RUN_SD / math.sqrt(3)  # t(3) has variance 3
    while True:
        z = rng.gauss(0, 1)
        chi2 = sum(rng.gauss(0, 1) ** 2 for _ in range(3))
        yield scale * z / math.sqrt(chi2 / 3)


def slow_drift(rng: random.Random) -> Iterator[float]:
    runs = 2 * MAX_BLOCKS + 2
    phase = rng.random() * 2 * math.pi
    t = 0
    while True:
        trend = math.log(1.10) * t / runs
        wave = 0.03 * math.sin(2 * math.pi * t / 20 + phase)
        yield trend + wave + rng.gauss(0, RUN_SD)
        t += 1


def slow_spells(rng: random.Random) -> Iterator[float]:
    slow = False
    while True:
        slow = rng.random() < (1 - 1 / 6) if slow else rng.random() < 0.03
        yield (math.log(1.15) if slow else 0.0) + rng.gauss(0, RUN_SD)


MODELS: dict[str, Model] = {
    "gaussian": gaussian,
    "student-t(3)": student_t,
    "slow drift": slow_drift,
    "slow spells": slow_spells,
}


def blocks_of(model: Model, rng: random.Random, effect: float) -> Iterator[float]:
    """Per block d = ln(variant / baseline): the two runs in a random order."""
    noise = model(rng)
    while True:
        first, second = next(noise), next(noise)
        if rng.random() < 0.5:
            base, var = first, second
        else:
            var, base = first, second
        yield math.log(effect) + var - base


@dataclass
class Round:
    verdict: str
    blocks: int
    forecast_at_first: int | None  # total blocks forecast at the first look; None: > limit
    undecided_at_first: bool


def one_round(model: Model, rng: random.Random, effect: float) -> Round:
    design = sequential.Design.plan(MIN_BLOCKS, MAX_BLOCKS)
    d: list[float] = []
    gen = blocks_of(model, rng, effect)
    forecast: int | None = None
    undecided_first = False
    for look in design.looks:
        while len(d) < look:
            d.append(next(gen))
        got = sequential.judge(d, THRESHOLD, design)
        if look == design.looks[0] and not got.decided:
            undecided_first = True
            forecast = None if got.blocks_needed is None else look + got.blocks_needed
        if got.settled or look == design.max_blocks:
            return Round(str(got.verdict), look, forecast, undecided_first)
    return Round("INCONCLUSIVE", design.max_blocks, forecast, undecided_first)


def baseline_check_alarm(model: Model, rng: random.Random) -> tuple[bool, bool]:
    """Nothing changed between the reference (10 runs) and a round's baseline arm (15
    runs, interleaved with a variant, so every other run): (new rule, old rule) alarms."""
    ref_noise = model(rng)
    reference = [math.exp(next(ref_noise)) for _ in range(10)]
    noise = model(rng)
    in_round = []
    for _ in range(15):
        a, b = next(noise), next(noise)
        in_round.append(math.exp(a if rng.random() < 0.5 else b))
    logs_ref = [math.log(v) for v in reference]
    logs_now = [math.log(v) for v in in_round]
    iv = stats.shift_interval(logs_ref, logs_now, 0.95)
    new = False
    if iv is not None:
        lo, hi = math.exp(iv[1]), math.exp(iv[2])
        new = stats.verdict_for(lo, hi, THRESHOLD) in (stats.FASTER, stats.SLOWER)
    old = abs(statistics.median(in_round) / statistics.median(reference) - 1) > THRESHOLD
    return new, old


@dataclass
class Row:
    model: str
    aa_false: float
    aa_measurable: float  # A/A rounds that ended "a measurable change" (a false one)
    aa_median_blocks: float
    power: float
    power_median_blocks: float
    small_found: float  # a 1.5% change (inside the band): MEASURABLE in the right direction
    small_wrong: float  # ... any answer of the wrong sign
    forecast_mae: float | None
    forecast_cases: int
    capped_right: float | None
    check_new: float
    check_old: float


def simulate(name: str, model: Model, rounds: int, seed: int) -> Row:
    rng = random.Random(seed)
    aa = [one_round(model, rng, 1.0) for _ in range(rounds)]
    pw = [one_round(model, rng, 1.05) for _ in range(rounds)]
    small = [one_round(model, rng, SMALL_EFFECT) for _ in range(rounds)]
    false = sum(r.verdict in ("FASTER", "SLOWER") for r in aa) / rounds
    aa_measurable = sum(r.verdict == "MEASURABLE" for r in aa) / rounds
    hits = [r for r in pw if r.verdict == "SLOWER"]
    errors: list[int] = []
    capped: list[bool] = []
    for r in aa + pw:
        if not r.undecided_at_first:
            continue
        if r.forecast_at_first is None:
            capped.append(r.verdict == "INCONCLUSIVE")
        elif r.verdict != "INCONCLUSIVE":
            errors.append(abs(r.forecast_at_first - r.blocks))
    alarms = [baseline_check_alarm(model, rng) for _ in range(rounds)]
    return Row(
        model=name,
        aa_false=false,
        aa_measurable=aa_measurable,
        aa_median_blocks=statistics.median(r.blocks for r in aa),
        power=len(hits) / rounds,
        power_median_blocks=statistics.median(r.blocks for r in hits) if hits else math.nan,
        small_found=sum(r.verdict in ("MEASURABLE", "SLOWER") for r in small) / rounds,
        small_wrong=sum(r.verdict == "FASTER" for r in small) / rounds,
        forecast_mae=statistics.median(errors) if errors else None,
        forecast_cases=len(errors),
        capped_right=sum(capped) / len(capped) if capped else None,
        check_new=sum(a for a, _ in alarms) / rounds,
        check_old=sum(b for _, b in alarms) / rounds,
    )


def table(rows: list[Row], rounds: int) -> str:
    design = sequential.Design.plan(MIN_BLOCKS, MAX_BLOCKS)
    head = (
        f"{rounds} rounds per model and case; band ±{THRESHOLD:.0%}, per-block sd "
        f"{BLOCK_SD:.0%}, looks {list(design.looks)} at {design.confidence:.1%} each "
        f"(MEASURABLE at {design.change_confidence:.1%})\n"
        f"{'noise model':<14} {'A/A false':>9} {'A/A meas':>8} {'A/A blk':>7} {'power 5%':>8} "
        f"{'pw blk':>6} {'1.5% found':>10} {'wrong':>5} {'fc MAE':>6} {'fc n':>5} "
        f"{'cap ok':>6} {'chk new':>7} {'chk old':>7}"
    )
    lines = [head]
    for r in rows:
        mae = "—" if r.forecast_mae is None else f"{r.forecast_mae:g}"
        cap = "—" if r.capped_right is None else f"{r.capped_right:.0%}"
        lines.append(
            f"{r.model:<14} {r.aa_false:>9.2%} {r.aa_measurable:>8.2%} {r.aa_median_blocks:>7g} "
            f"{r.power:>8.1%} {r.power_median_blocks:>6g} {r.small_found:>10.1%} "
            f"{r.small_wrong:>5.1%} {mae:>6} {r.forecast_cases:>5} {cap:>6} "
            f"{r.check_new:>7.2%} {r.check_old:>7.2%}"
        )
    lines.append(
        "targets: A/A false <= 2%, A/A meas (a false 'measurable change') <= 1%, power >= "
        "90% within 30 blocks; 1.5% found: a real 1.5% change said MEASURABLE (or SLOWER), "
        "wrong: said FASTER. fc: forecast at block 10 "
        "vs blocks needed (median abs error, cases); cap ok: 'not decidable within 30' was "
        "right; chk: baseline check false alarms, nothing changed (new rule / old rule)"
    )
    return "\n".join(lines)


def baseline_outcomes(model: Model, rng: random.Random, drift: float = 0.0) -> str:
    """One adaptive baseline (the defaults: 10 to 30 runs at ±2%) under a noise model, with
    an optional drift (the last run `drift` slower than the first): its outcome."""
    top = baseline_rule.DEFAULT_MAX_RUNS
    noise = model(rng)
    runs = [math.exp(next(noise) + math.log1p(drift) * k / (top - 1)) for k in range(top)]
    for look in baseline_rule.looks(10, top):
        j = baseline_rule.judge("w", runs[:look], THRESHOLD, final=look == top)
        if j.outcome is not None:
            return str(j.outcome)
    return "undecided"


def baseline_table(rounds: int, seed: int) -> str:
    rng = random.Random(seed)
    names = ["reproducible", "too noisy for this band", "drifting"]
    lines = [
        f"\nbaseline split-half check, {rounds} baselines per model (10 to "
        f"{baseline_rule.DEFAULT_MAX_RUNS} runs, ±2%, "
        f"per-run sd {RUN_SD:.1%}): outcomes when nothing drifts (A/A), and with a 6% drift",
        f"{'noise model':<14} {'A/A: reprod.':>12} {'too noisy':>9} {'drifting':>8} | "
        f"{'6% drift: drifting':>18} {'reprod.':>7}",
    ]
    for name, model in MODELS.items():
        aa = [baseline_outcomes(model, rng) for _ in range(rounds)]
        dr = [baseline_outcomes(model, rng, drift=0.06) for _ in range(rounds)]
        share = [aa.count(n) / rounds for n in names]
        lines.append(
            f"{name:<14} {share[0]:>12.1%} {share[1]:>9.1%} {share[2]:>8.2%} | "
            f"{dr.count('drifting') / rounds:>18.1%} {dr.count('reproducible') / rounds:>7.1%}"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--baselines", type=int, default=2000, help="baselines per noise model")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = [
        simulate(name, model, args.rounds, args.seed + k)
        for k, (name, model) in enumerate(MODELS.items())
    ]
    print(table(rows, args.rounds))
    print(baseline_table(args.baselines, args.seed))
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
