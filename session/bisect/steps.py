"""One round of a bisection: the commits of a probe, interleaved and paired.

Each block runs every commit once in a fresh random order (measure.schedule), after one
excluded warm-up run each; the per-block log ratios give the Hodges–Lehmann ratio and
the verdict of the sequential design of a round (measure.sequential), read at its looks
only. The interval kept is the one that decided, with its confidence, as a round keeps
it. A step stops at the first look where the verdicts place the midpoint
(session.bisect.search.side_of), or at its block limit. The values come from a sampler,
so the conductor runs processes and the benchmark draws synthetic values through the
same code.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from measure import schedule, sequential
from measure.stats import paired_log_ratios
from session import models as m
from session.bisect.models import Judged, Side, Step
from session.bisect.search import Probe, placed, side_of
from session.conduct.loop import undecided_words

# (commit index, block) -> (value, "") or (None, why it gave none); block 0 is a warm-up.
Sampler = Callable[[int, int], tuple[float | None, str]]

MAX_FAILED_RUNS = 3  # runs of one commit that may fail in a round before it is skipped
MAX_ATTEMPTS = 3  # a block with an untrusted run is run again, at most this often in all
UNTRUSTED = "untrusted"  # a sampler's why for a run its telemetry does not trust


@dataclass
class RoundResult:
    probe: Probe
    values: dict[int, dict[int, float]] = field(default_factory=dict)
    blocks: int = 0
    runs: int = 0
    failed: dict[int, str] = field(default_factory=dict)  # commit index -> why it gave no value
    vs_lo: Judged | None = None  # mid / lo (the confirm round: hi / lo)
    vs_hi: Judged | None = None  # mid / hi
    side: Side | None = None
    interrupted: bool = False
    elapsed_s: float = 0.0
    quarantined: int = 0  # runs left out: their telemetry was untrusted (blocks run again)
    left_out: list[int] = field(default_factory=list)  # blocks untrusted in every attempt


def judge(
    a: dict[int, float],
    b: dict[int, float],
    threshold: float,
    design: sequential.Design,
    higher: bool,
    final: bool,
) -> Judged:
    """a against b over their common blocks: ratio a / b, as a round compares a variant."""
    blocks = sorted(set(a) & set(b))
    d = paired_log_ratios([b[k] for k in blocks], [a[k] for k in blocks], higher)
    look = sequential.judge(d, threshold, design)
    shown = look.interval  # the interval that decided: kept, and said, with its confidence
    return Judged(
        verdict=look.verdict,
        n=shown.n,
        ratio=shown.ratio,
        ci_low=shown.ci_low,
        ci_high=shown.ci_high,
        confidence=look.confidence,
        min_effect=None if look.decided else look.min_effect,
        blocks_needed=None if look.decided else look.blocks_needed,
        settled=look.settled or not look.decided,
        note="" if look.decided else undecided_words(look, shown, design, final),
    )


def run_round(
    probe: Probe,
    sample: Sampler,
    *,
    threshold: float,
    min_blocks: int,
    max_blocks: int,
    seed: int,
    higher: bool = False,
    stopped: Callable[[], bool] = lambda: False,
    on_block: Callable[[RoundResult], None] | None = None,
) -> RoundResult:
    """Measure the probe's commits until the sequential rule decides (see the module)."""
    rng = random.Random(seed)
    design = sequential.Design.plan(min_blocks, max_blocks)
    out = RoundResult(probe, {i: {} for i in probe.indices})
    t0 = time.monotonic()
    fails: dict[int, int] = {}
    arms = [str(i) for i in probe.indices]
    try:
        for idx in (int(a) for a in schedule.block_order(arms, rng)):  # warm-up, excluded
            if stopped():
                out.interrupted = True
                return out
            value, why = sample(idx, 0)
            out.runs += 1
            if value is None and not why.startswith(UNTRUSTED):  # untrusted: excluded anyway
                out.failed[idx] = f"failed its first run ({why})" if why else "failed its first run"
                return out
        for block in range(1, max_blocks + 1):
            if not _block(out, block, arms, sample, rng, stopped, fails):
                return out
            out.blocks = block
            final = block >= max_blocks
            looked = design.is_look(block) or final
            if looked and _decide(out, threshold, design, higher, final):
                break
            if on_block is not None:
                on_block(out)
        return out
    finally:
        out.elapsed_s = round(time.monotonic() - t0, 3)


def _block(
    out: RoundResult,
    block: int,
    arms: list[str],
    sample: Sampler,
    rng: random.Random,
    stopped: Callable[[], bool],
    fails: dict[int, int],
) -> bool:
    """One block, run again (in a fresh order) after a run telemetry does not trust, as a
    round does; left out after MAX_ATTEMPTS. False when the round must end (stopped, or
    a commit failed)."""
    for _ in range(MAX_ATTEMPTS):
        values: dict[int, float] = {}
        untrusted = False
        for idx in (int(a) for a in schedule.block_order(arms, rng)):
            if stopped():
                out.interrupted = True
                return False
            value, why = sample(idx, block)
            out.runs += 1
            if value is None and why.startswith(UNTRUSTED):
                out.quarantined += 1
                untrusted = True
                break
            if value is None:
                fails[idx] = fails.get(idx, 0) + 1
                if fails[idx] >= MAX_FAILED_RUNS:
                    out.failed[idx] = f"failed {fails[idx]} of its runs (last: {why})"
                    return False
                continue
            values[idx] = value
        if not untrusted:
            for idx, value in values.items():
                out.values[idx][block] = value
            return True
    out.left_out.append(block)
    return True


def _decide(
    out: RoundResult, threshold: float, design: sequential.Design, higher: bool, final: bool
) -> bool:
    p, v = out.probe, out.values
    if p.mid is None:
        out.vs_lo = judge(v[p.hi], v[p.lo], threshold, design, higher, final)
        return final or placed(out.vs_lo)
    out.vs_lo = judge(v[p.mid], v[p.lo], threshold, design, higher, final)
    out.vs_hi = judge(v[p.mid], v[p.hi], threshold, design, higher, final)
    out.side = side_of(out.vs_lo, out.vs_hi, final)
    if out.side is None and (_hopeless(out.vs_lo) or _hopeless(out.vs_hi)):
        # One end is decided over the band (side_of would have placed it otherwise only
        # with both decided) and the other is forecast not to decide within the limit:
        # the half with the decided change is searched now, the other said unresolved.
        leans = side_of(out.vs_lo, out.vs_hi, final=True)
        if leans in (Side.LEANS_GOOD, Side.LEANS_BAD):
            out.side = leans
    return out.side is not None


def _hopeless(j: Judged) -> bool:
    """Undecided, and the forecast says no decision comes within the block limit."""
    return j.verdict is m.Verdict.INCONCLUSIVE and j.blocks_needed is None and j.n > 0


def to_step(number: int, result: RoundResult, keys: list[str], seed: int = 0) -> Step:
    """The stored step of a round (keys: each commit index's name, e.g. its sha); a commit
    that failed makes the midpoint SKIPPED (the caller refuses a failed end)."""
    p = result.probe
    step = Step(number=number, kind=p.kind, lo=p.lo, hi=p.hi, mid=p.mid, seed=seed)
    step.blocks, step.runs, step.elapsed_s = result.blocks, result.runs, result.elapsed_s
    step.quarantined, step.left_out = result.quarantined, list(result.left_out)
    step.vs_lo, step.vs_hi, step.side = result.vs_lo, result.vs_hi, result.side
    step.values = {keys[i]: dict(v) for i, v in result.values.items()}
    if result.interrupted:
        step.side = Side.INTERRUPTED
    elif p.mid is not None and p.mid in result.failed:
        step.side, step.reason = Side.SKIPPED, result.failed[p.mid]
    return step
