"""The order of runs within a block, when to stop a round, and how long it still takes.

A round stops early only at the looks of its sequential design (measure.sequential); the
rule here says what ends it otherwise: the block limit or the time budget."""

from __future__ import annotations

import random
from collections.abc import Sequence

from measure.stats import INCONCLUSIVE, PairedEstimate

STOP_DECIDED = "decided"  # every comparison has a verdict, after the minimum of blocks
STOP_MAX_BLOCKS = "max_blocks"  # the block limit is reached
STOP_BUDGET = "budget"  # another block would run past the time budget


def block_order(arms: Sequence[str], rng: random.Random) -> list[str]:
    """A fresh random order of the arms (the baseline and each variant) for one block."""
    return rng.sample(list(arms), len(arms))


def _undecided(estimates: Sequence[PairedEstimate]) -> list[PairedEstimate]:
    return [e for e in estimates if e.verdict == INCONCLUSIVE]


def stop_reason(
    estimates: Sequence[PairedEstimate],
    blocks: int,
    min_blocks: int,
    max_blocks: int,
    elapsed_s: float,
    budget_s: float | None,
    overhead_s: float = 0.0,
) -> str | None:
    """Why the round stops after `blocks` completed blocks, or None to run another one.

    - "decided": at least min_blocks blocks and every estimate has a verdict (a round
      without any comparison stops there too);
    - "max_blocks": max_blocks blocks are done;
    - "budget": the time is spent, or one more block, at the mean block time so far,
      would run past budget_s. `overhead_s` is the part of elapsed_s spent once before the
      first block (worktrees, setup, checks, warm-ups): it counts against the budget but is
      not a block's cost, so it stays out of the mean block time.
    """
    if blocks >= min_blocks and not _undecided(estimates):
        return STOP_DECIDED
    if blocks >= max_blocks:
        return STOP_MAX_BLOCKS
    if budget_spent(blocks, elapsed_s, budget_s, overhead_s):
        return STOP_BUDGET
    return None


def budget_spent(
    blocks: int, elapsed_s: float, budget_s: float | None, overhead_s: float = 0.0
) -> bool:
    """The time is spent, or one more block, at the mean block time so far, would run past
    the budget (`overhead_s`: the part of elapsed_s spent once, before the first block)."""
    if budget_s is None:
        return False
    if elapsed_s >= budget_s:
        return True
    per_block = max(0.0, elapsed_s - overhead_s) / blocks if blocks > 0 else 0.0
    return blocks > 0 and elapsed_s + per_block > budget_s


def pace_eta_s(elapsed_s: float, done: int, total: int) -> float | None:
    """Seconds left for `total - done` more runs at the pace of the `done` so far; None
    before the first (nothing to go by yet: none made up)."""
    if done <= 0 or elapsed_s <= 0:
        return None
    return elapsed_s / done * max(total - done, 0)


def eta_s(
    blocks: int,
    max_blocks: int,
    elapsed_s: float,
    estimates: Sequence[PairedEstimate],
    min_blocks: int = 0,
) -> float | None:
    """Seconds still to go, from the mean block time so far; None before the first block.

    The blocks still to run are the most that any undecided comparison is forecast to
    need (its blocks_needed; the whole remainder when it has no forecast), at least what
    min_blocks still asks for, and never more than the block limit leaves.
    """
    if blocks <= 0:
        return None
    left = max(0, max_blocks - blocks)
    more = max(0, min_blocks - blocks)
    for e in _undecided(estimates):
        more = max(more, e.blocks_needed if e.blocks_needed is not None else left)
    if not estimates and blocks < min_blocks:
        more = max(more, min_blocks - blocks)
    return min(more, left) * (elapsed_s / blocks)
