"""Sentences about a round that the app and the CLI show as they are: one source, so the
words cannot drift apart. Keys are the caller's (the app's bindings as remapped), filled in
where the sentence says what to press."""

from __future__ import annotations

from measure.sequential import LOOK_EVERY

ROUND_GUIDANCE = (
    "Each variant changes one thing and points at one hypothesis. A round runs the "
    "baseline and every variant once per block, in a fresh random order, and reads the "
    f"results only at planned looks (the minimum of blocks, then every {LOOK_EVERY}): it "
    "stops at the first look where every comparison is decided, or at its maximum."
)


def untrusted_round(number: int, why: str, *, baseline_moved: bool, keys: str) -> str:
    """What to do about a round whose verdicts are untrusted. `keys`: how the reader does
    it from where they are ("g", or "5, then g" from another step)."""
    if baseline_moved:
        return (
            f"round {number}'s verdicts are untrusted ({why}): record the baseline again "
            f"and re-run the round ({keys})."
        )
    return f"round {number}'s verdicts are untrusted ({why}): run it again ({keys})."
