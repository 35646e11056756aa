"""Words about a torch check that the verdict shows beside its speed (issue 20).

Kept apart from `session.verdicts` so the verdict rule itself stays as it is: these only
add what the torch harness knows — which trial failed and by how much, a precision change
the contract allowed ("at float16"), and results too good to take without a second look.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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


# A measured probe (a plain copy, one matmul) is a lower bound of the chip's ceiling: a
# workload may beat it. The floor takes the probe (or the profiled step's own rate, if
# higher) at twice its figure, so only a time no implementation could reach reads as
# impossible: with measured ceilings a variant is never called impossible at under 2×.
PROBE_HEADROOM = 2.0


@dataclass(frozen=True)
class Floor:
    """The least time one step of a workload can take on this machine: its FLOPs at the
    FLOP/s ceiling or the bytes it must move (its inputs and outputs) at the bandwidth
    ceiling, whichever is longer. `step_ms` is the profiled arm's own step time, so a
    comparison's ratio gives the variant's time on the same machine."""

    floor_ms: float
    step_ms: float
    flops: float | None
    io_bytes: float | None
    ceilings: str  # where the ceilings came from, in words

    @property
    def least_ratio(self) -> float:
        """The smallest variant/baseline time ratio this machine allows."""
        return self.floor_ms / self.step_ms

    def as_dict(self) -> dict[str, Any]:
        return {
            "floor_ms": self.floor_ms,
            "step_ms": self.step_ms,
            "flops": self.flops,
            "io_bytes": self.io_bytes,
            "ceilings": self.ceilings,
        }


def roofline_floor(summary: Mapping[str, Any] | None) -> Floor | None:
    """The floor of a profile summary (`session.profile.run.summarize`'s, the baseline's): None
    where the profile lacks a step time, ceilings, or both FLOPs and input/output bytes."""
    if not summary:
        return None
    step_ms = _positive(summary.get("step_ms"))
    roof = (summary.get("roofline") or {}).get("ceilings") or {}
    work = summary.get("work") or {}
    flops_ceiling, bandwidth = _positive(roof.get("flops")), _positive(roof.get("bandwidth"))
    flops, io_bytes = _positive(work.get("flops")), _positive(work.get("io_bytes"))
    if step_ms is None or (flops is None and io_bytes is None):
        return None
    if flops_ceiling is None or bandwidth is None:
        return None
    source = str(roof.get("source") or "")
    # What the profiled step itself achieved is a ceiling's lower bound too (a probe run
    # on a loaded machine can read below it).
    step_s = step_ms / 1e3
    flops_ceiling = max(flops_ceiling, (flops or 0.0) / step_s)
    bandwidth = max(bandwidth, (io_bytes or 0.0) / step_s)
    if source.startswith("measured"):
        flops_ceiling, bandwidth = flops_ceiling * PROBE_HEADROOM, bandwidth * PROBE_HEADROOM
        source += f", taken at {PROBE_HEADROOM:g}× (a probe is a lower bound)"
    floor_s = max((flops or 0.0) / flops_ceiling, (io_bytes or 0.0) / bandwidth)
    if floor_s <= 0:
        return None
    return Floor(floor_s * 1e3, step_ms, flops, io_bytes, source)


def floors_of(profiles: Mapping[str, Any]) -> dict[str, Floor]:
    """Per workload, the roofline floor of the baseline's newest profile (workload ->
    Evidence; where it has the FLOPs or bytes and the ceilings): a variant's time below it
    cannot read FASTER (the ledger's: session.profile.run.baseline_floors)."""
    found = {}
    for workload, ev in profiles.items():
        floor = roofline_floor(ev.summary)
        if floor is not None:
            found[workload] = floor
    return found


def floor_words(ratio: float | None, floor: Floor | None) -> str:
    """The words of `below_floor` for a comparison's ratio against its workload's floor."""
    if floor is None or ratio is None or not ratio > 0:
        return ""
    return below_floor(floor.step_ms * ratio, floor.floor_ms)


def _positive(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v > 0 and v == v and v != float("inf") else None
