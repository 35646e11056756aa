"""The one block minimum of a round: the fewest paired blocks whose interval exists at the
confidence its design (the looks between min and max blocks) spends at each look.

Fewer blocks than this can never decide, so a round form refuses them; the app and the
core ask this one function (it was 6 in the app and 2 in the core).
"""

from __future__ import annotations

from measure import stats
from measure.sequential import Design


def fewest_blocks(min_blocks: int, max_blocks: int) -> int:
    """The block minimum of the design planned for these bounds (8 for 10 to 30)."""
    return stats.min_paired_blocks(Design.plan(min_blocks, max_blocks).confidence)


def blocks_problem(min_blocks: int, max_blocks: int) -> str | None:
    """Why these bounds cannot make a round that may decide (None: they can)."""
    if min_blocks < 1 or max_blocks < min_blocks:
        return "blocks: need whole numbers with min-blocks <= max-blocks"
    floor = fewest_blocks(min_blocks, max_blocks)
    if min_blocks < floor:
        return (
            f"blocks: need min-blocks >= {floor} for {min_blocks} to {max_blocks} blocks: "
            "fewer paired blocks can never decide"
        )
    return None
