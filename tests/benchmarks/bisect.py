"""gpuopt bisect against `git bisect run` with a hyperfine script, on simulated histories.

    python -m tests.benchmarks.bisect [--histories 20] [--seed 1] [--band 0.10]

Each history is a first-parent line of 24–64 commits with one step change (+20% to +40%)
at a random commit, run on a simulated machine like this VM: per-run noise with a
coefficient of variation of 5–25% (log-normal, drawn per history) and slow spells (a run
enters one with chance 1%, and it lasts 20–80 runs at 1.2–1.6× the time). Time is one
clock per history, so a spell hits whatever runs then.

- gpuopt: session.bisect's own search and rounds (search.Search, steps.run_round: the
  interleaved paired blocks and the sequential rule of a round), driven by a sampler that
  draws the synthetic values instead of running processes.
- git bisect run + hyperfine: at each midpoint the script runs `hyperfine GOOD MID`
  (10 runs of each, the first command's runs first, no interleaving: hyperfine's order),
  and calls the commit bad when mean(MID) / mean(GOOD) > 1.10. hyperfine itself is not
  run (these histories are synthetic); its rule is applied to the same sampler's values.

Found: the one change reported is the true culprit; wrong: a change reported elsewhere (or
more than one); undecided: no culprit named (gpuopt only: git bisect always names one).
Then as many A/A histories (good and bad the same): there the right answer is "no
difference", and any commit named is wrong.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from dataclasses import dataclass, field

from session.bisect.search import Search
from session.bisect.steps import run_round, to_step


@dataclass
class Machine:
    """A simulated box: per-run log-normal noise and slow spells, on one clock."""

    cv: float
    rng: random.Random
    spell_left: int = 0
    spell_factor: float = 1.0
    runs: int = 0

    def run(self, true_time: float) -> float:
        self.runs += 1
        if self.spell_left > 0:
            self.spell_left -= 1
        elif self.rng.random() < 0.01:
            self.spell_left = self.rng.randint(20, 80)
            self.spell_factor = self.rng.uniform(1.2, 1.6)
        factor = self.spell_factor if self.spell_left > 0 else 1.0
        sigma = math.sqrt(math.log1p(self.cv**2))
        return true_time * factor * math.exp(self.rng.gauss(-sigma * sigma / 2, sigma))


@dataclass
class History:
    n: int
    culprit: int  # first commit with the new time
    step: float  # e.g. 0.3 for +30%
    cv: float
    seed: int

    def time(self, i: int) -> float:
        return 1.0 * (1 + self.step if i >= self.culprit else 1.0)


@dataclass
class Outcome:
    found: bool = False
    wrong: bool = False
    undecided: bool = False
    rounds: int = 0
    runs: int = 0
    said: list[int] = field(default_factory=list)


def histories(k: int, seed: int, aa: bool = False) -> list[History]:
    """k histories; `aa`: with no change at all (good and bad measure the same)."""
    rng = random.Random(seed)
    out = []
    for j in range(k):
        n = rng.randint(24, 64)
        culprit, step = rng.randint(1, n - 1), rng.uniform(0.2, 0.4)
        out.append(History(n, culprit, 0.0 if aa else step, rng.uniform(0.05, 0.25), j))
    return out


def gpuopt(h: History, band: float, max_blocks: int) -> Outcome:
    machine = Machine(h.cv, random.Random(h.seed * 7919 + 1))
    state = Search(h.n)
    out = Outcome()
    keys = [str(i) for i in range(h.n)]
    step_rng = random.Random(h.seed)
    while (probe := state.next_probe()) is not None:
        result = run_round(
            probe,
            lambda i, _block: (machine.run(h.time(i)), ""),
            threshold=band,
            min_blocks=10,
            max_blocks=max_blocks,
            seed=step_rng.randrange(2**31),
        )
        out.rounds += 1
        state.record(to_step(out.rounds, result, keys))
    out.runs = machine.runs
    answer = state.answer()
    out.said = [c.after for c in answer.changes]
    if h.step == 0:  # A/A: right only when it says there is no difference
        out.found = answer.kind == "no difference"
        out.wrong = bool(out.said)
        out.undecided = not out.found and not out.wrong
    elif not out.said:
        out.undecided = True
    elif out.said == [h.culprit]:
        out.found = True
    else:
        out.wrong = True
    return out


def hyperfine_bisect(h: History, cut: float = 0.10, runs: int = 10) -> Outcome:
    """`git bisect run ./script`: the script times GOOD then MID with hyperfine and exits 1
    (bad) when the ratio of their means exceeds 1 + cut."""
    machine = Machine(h.cv, random.Random(h.seed * 7919 + 1))
    lo, hi = 0, h.n - 1
    out = Outcome()
    while hi - lo > 1:
        mid = (lo + hi) // 2
        good = [machine.run(h.time(0)) for _ in range(runs)]
        new = [machine.run(h.time(mid)) for _ in range(runs)]
        out.rounds += 1
        if statistics.fmean(new) / statistics.fmean(good) > 1 + cut:
            hi = mid
        else:
            lo = mid
    out.runs = machine.runs
    out.said = [hi]
    out.found = hi == h.culprit and h.step > 0  # an A/A history has no culprit to find
    out.wrong = not out.found
    return out


def report(name: str, outcomes: list[Outcome]) -> None:
    rounds = [o.rounds for o in outcomes]
    runs = [o.runs for o in outcomes]
    print(
        f"{name:<28} found {sum(o.found for o in outcomes):>2}  "
        f"wrong {sum(o.wrong for o in outcomes):>2}  "
        f"undecided {sum(o.undecided for o in outcomes):>2}  "
        f"rounds mean {statistics.fmean(rounds):.1f} (max {max(rounds)})  "
        f"runs mean {statistics.fmean(runs):.0f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--histories", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--band", type=float, default=0.05, help="gpuopt's band (0.05)")
    ap.add_argument("--max-blocks", type=int, default=40, help="gpuopt's block limit (40)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    hs = histories(args.histories, args.seed)
    ours = [gpuopt(h, args.band, args.max_blocks) for h in hs]
    theirs = [hyperfine_bisect(h) for h in hs]
    print(
        f"{len(hs)} simulated histories (24-64 commits, one +20-40% step, per-run CV 5-25%, "
        f"slow spells 1.2-1.6x); gpuopt band ±{args.band:.0%}, hyperfine cut 10%"
    )
    ideal = statistics.fmean(1 + math.ceil(math.log2(h.n - 1)) for h in hs)
    print(f"(one round to confirm + log2 of the commits between: {ideal:.1f} rounds on average)")
    report("gpuopt bisect", ours)
    report("git bisect run + hyperfine", theirs)
    aa = histories(args.histories, args.seed + 1000, aa=True)
    print(f"{len(aa)} A/A histories (no change; 'found' = said there is no difference):")
    report("gpuopt bisect", [gpuopt(h, args.band, args.max_blocks) for h in aa])
    report("git bisect run + hyperfine", [hyperfine_bisect(h) for h in aa])
    if args.verbose:
        for h, a, b in zip(hs, ours, theirs, strict=True):
            print(
                f"  n={h.n:>2} culprit={h.culprit:>2} step=+{h.step:.0%} cv={h.cv:.0%}: "
                f"gpuopt {a.said} in {a.rounds} rounds, hyperfine {b.said} in {b.rounds}"
            )


if __name__ == "__main__":
    main()
