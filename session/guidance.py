"""Sentences about a round that the app and the CLI show as they are: one source, so the
words cannot drift apart. Keys are the caller's (the app's bindings as remapped), filled in
where the sentence says what to press."""

from __future__ import annotations

from dataclasses import dataclass

from measure.sequential import LOOK_EVERY
from session import models as m
from session.bands import band
from session.verdicts import round_untrusted
from session.view import SessionView

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


@dataclass(frozen=True)
class RoundKeys:
    """The keys the round step's next step names, as the caller's keymap has them."""

    run: str = "r"
    add: str = "a"
    band: str = "f"
    rebaseline: str = "g"
    results: str = "6"
    baseline_step: str = "2"


def round_next(
    view: SessionView,
    keys: RoundKeys,
    *,
    advised: float | None = None,
    typed: float | None = None,
) -> str:
    """The round step's next step, following the state of the session: what the last round
    left (untrusted, stopped, completed) comes before the baseline's band advice, which only
    matters before a first round. `advised`: the band a too-noisy baseline supports;
    `typed`: the band the round is set to (None: the contract's)."""
    if view.baseline is None:
        return f"record a baseline first ({keys.baseline_step})."
    if not view.variants:
        return f"press {keys.add} to add a variant from a git ref."
    rnd = view.last_round
    if rnd is not None:
        why = round_untrusted(rnd)
        if why:
            moved = rnd.baseline_reproduced is False
            key = keys.rebaseline if moved else keys.run
            return untrusted_round(rnd.number, why, baseline_moved=moved, keys=f"press {key}")
        if rnd.status is not m.RoundStatus.COMPLETED:
            return f"round {rnd.number} {rnd.status.value}: press {keys.run} to run it again."
        measured = {c.variant_id for c in view.all_comparisons()}
        new = [v.name for v in view.variants if v.id not in measured]
        if new:
            return (
                f"round {rnd.number} is done; {', '.join(new)} not measured yet: press "
                f"{keys.run} to run a round with it."
            )
        return (
            f"round {rnd.number} is done: read its results ({keys.results}), or add a "
            f"variant ({keys.add}) and run another round ({keys.run})."
        )
    if advised is not None and not narrower_than_advised(typed, advised):
        return (
            f"the round is set to {band(typed or advised)}, a band the baseline supports: "
            f"press {keys.run} to run it."
        )
    if advised is not None:
        return (
            f"the baseline is too noisy for its band; press {keys.band} to use the band it "
            f"supports (threshold {advised:.3g}), then {keys.run} to run a round."
        )
    return f"press {keys.run} to run a round with these variants."


@dataclass(frozen=True)
class BaselineKeys:
    """The keys the baseline step's next step names, as the caller's keymap has them."""

    record: str = "r"  # the Baseline step's: record it (again)
    next: str = "n"  # the next step (the preflight)
    round_step: str = "5"  # the key that shows the Round step
    band: str = "f"  # the Round step's: fill in the band the baseline supports
    run: str = "r"  # the Round step's: run the round


def noisy_baseline_next(
    words: str, delta: float, supported: float | None, keys: BaselineKeys
) -> str:
    """The baseline step's next step in the app, for a baseline too noisy for its band
    `delta`: where a round may go on, in the app's keys (the CLI says it as
    `gpuopt round --threshold`, in `session.gates.baseline_warning`). `words`: the
    baseline's outcome in words; `supported`: the band its runs support (None: none)."""
    more = f"or {keys.record} here to record it with more runs"
    then = f"Then answer the preflight ({keys.next})."
    if supported is None or supported <= delta:
        return f"{words}: a round may go on, expecting INCONCLUSIVE verdicts; {more}. {then}"
    return (
        f"{words}: a round may go on at {band(supported)}, the band its runs support (on the "
        f"Round step ({keys.round_step}), once its variants are in: {keys.band} fills in "
        f"that band, then {keys.run} runs the round); {more}. {then}"
    )


def narrower_than_advised(typed: float | None, advised: float) -> bool:
    """A round set narrower than the band its baseline supports (None: the contract's,
    which is why the baseline advised another)."""
    return typed is None or typed < advised * (1 - 1e-9)


def narrow_band_question(
    chosen: float, advised: float | None, typed: float | None, keys: RoundKeys
) -> str:
    """What to ask before a round at a band narrower than its baseline supports ("" for
    none): a new user pressed r past the advice, and 30 blocks later the control was still
    INCONCLUSIVE. `chosen`: the band the round would use."""
    if advised is None or not narrower_than_advised(typed, advised):
        return ""
    return (
        f"The baseline is too noisy for {band(chosen)}: a round at that band is likely to "
        f"run to its block limit and leave comparisons INCONCLUSIVE. Run it at "
        f"{band(chosen)} anyway? (No, then {keys.band}: the {band(advised)} the baseline "
        "supports.)"
    )
