"""What an undecided comparison would need, in words (the round's and compare's notes).

Standard library and measure's statistics only: `gpuopt compare` imports it without the
engine's models.
"""

from __future__ import annotations

import math

from measure import sequential, stats
from measure.stats import PairedEstimate

__all__ = ["blocks_text", "undecided_words"]


def undecided_words(
    look: sequential.Look, shown: PairedEstimate, design: sequential.Design, final: bool
) -> str:
    """What an INCONCLUSIVE comparison would need, in words, with the smallest effect the
    round can resolve at this noise, true to what ran: a design that cannot decide within
    its limit says so, and an effect larger than that smallest one says why it is still
    undecided."""
    limit, n = design.max_blocks, look.estimate.n
    least = stats.min_paired_blocks(design.confidence)
    if limit < least:
        return (
            f"no verdict is possible within {limit} blocks: the stopping rule's "
            f"{design.confidence:.1%} interval needs at least {least} blocks with values "
            f"(--max-blocks {least} or more)"
        )
    if n < least:
        few = f"{blocks_text(n)} with values {'is' if n == 1 else 'are'} too few for a verdict"
        few += f" (at least {least})"
        if final:
            return f"{few}: the round stopped before any look that could decide"
        return f"{few}; about {max(least - n, look.blocks_needed or 0)} more blocks would decide"
    if look.min_effect is None:
        return f"too few blocks to judge yet (at least {design.looks[0]})"
    effect = f"the smallest effect this round can resolve is {look.min_effect:.1%}"
    # not the baseline's "a round resolves ±x%" (a band, from the baseline's runs alone):
    # a change must clear this round's band by its interval, at the variant's paired noise
    edge = f"±{look.threshold * 100:g}%"
    effect += (
        f" (in {limit} blocks: the {edge} band plus its interval's half-width, at this "
        "round's own paired noise)"
    )
    seen = _effect(shown.ratio)
    if seen is not None and seen > look.min_effect:
        effect += f"; the effect seen ({seen:.1%}) is larger, so more blocks would likely decide it"
    if final and n < limit:
        return f"not decided in the {blocks_text(n)} that ran (of at most {limit}); {effect}"
    if final or look.blocks_needed is None:
        return f"not decidable at this noise within {limit} blocks; {effect}"
    return f"about {look.blocks_needed} more blocks would decide; {effect}"


def blocks_text(n: int) -> str:
    return f"{n} block" if n == 1 else f"{n} blocks"


def _effect(ratio: float | None) -> float | None:
    """A ratio as the size of the change it says: 0.53 and 1.89 are both 47%."""
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return None
    return 1 - ratio if ratio < 1 else 1 - 1 / ratio
