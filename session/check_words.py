"""Words about a torch check that the verdict shows beside its speed (issue 20).

Kept apart from `session.verdicts` so the verdict rule itself stays as it is: these only
add what the torch harness knows — which trial failed and by how much, a precision change
the contract allowed ("at float16"), and results too good to take without a second look.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: `gpuopt compare` imports the verdicts without the models
    from session import models as m

SECOND_LOOK_RATIO = 0.1  # a variant over 10× faster than its baseline asks for a second look
_HEADLINES = ("failed on ", "failed: ")


def check_headline(check: m.CorrectnessResult, limit: int = 110) -> str:
    """The torch check's own first line when it failed ("failed on stress ×100: max abs
    …"): it names the trial that failed and the biggest error. "" for other checks."""
    if check.passed or not check.output_tail.startswith(_HEADLINES):
        return ""
    line = check.output_tail.splitlines()[0].strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


def precision_note(checks: list[m.CorrectnessResult]) -> str:
    """ "at float16" when a passing check compared a changed precision at the contract's
    declared tolerance ("" otherwise)."""
    for c in checks:
        note = str(c.options.get("precision") or "")
        if c.passed and note:
            return note
    return ""


def second_look(ratio: float | None) -> str:
    """A FASTER verdict more than 10× faster: plausible for an algorithmic change, but the
    usual sign of a candidate that skips work the check did not see."""
    if ratio is None or not 0 < ratio < SECOND_LOOK_RATIO:
        return ""
    return f"{1 / ratio:.0f}× faster: have a second look at the candidate before keeping it"


BELOW_FLOOR = "faster than this machine can compute it: check the candidate"


def below_floor(time_ms: float | None, floor_ms: float | None) -> str:
    """A measured time below the roofline floor (the profile's FLOPs and bytes against the
    measured ceilings) is not a speedup but a sign the work was not done."""
    if time_ms is None or floor_ms is None or floor_ms <= 0 or time_ms >= floor_ms:
        return ""
    return f"{time_ms:.3g} ms is below the roofline floor of {floor_ms:.3g} ms: {BELOW_FLOOR}"
