"""Whether the telemetry names a cause for a baseline's drift, and its repair.

A baseline whose two halves differ (drifting) warns only: on a shared machine drift is what
slow spells look like, and a round's interleaved, paired blocks cancel it. It blocks a round
only when the runs' telemetry names a cause that would also bias a round: the GPU throttled,
its clocks changed, or another process used it. Each cause comes with its repair.

``telemetry_cause(reasons)`` reads the trust reasons of the baseline's runs (the words of
measure.telemetry.trust) and returns a `Cause` or None. Pure: standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Cause", "telemetry_cause"]


@dataclass(frozen=True)
class Cause:
    kind: str  # "throttling", "clocks changing", "another process on the GPU"
    seen: str  # the first reason that named it, as the telemetry said it
    repair: str

    @property
    def words(self) -> str:
        return f"{self.kind} ({self.seen})"


_THROTTLE = re.compile(
    r"HW slowdown|thermal slowdown|power brake|thermal violation|SW power cap", re.I
)
_CLOCKS = re.compile(r"SM clock spread|median SM clock", re.I)
_FOREIGN = re.compile(r"another process on the GPU: (.*)", re.I)

_REPAIRS = {
    "throttling": (
        "let the GPU cool down (watch `nvidia-smi -q -d PERFORMANCE` until no slowdown "
        "reason is active), check its cooling and power limit"
    ),
    "clocks changing": (
        "lock the clocks (`sudo nvidia-smi --lock-gpu-clocks=F,F` at a supported F from "
        "`nvidia-smi -q -d SUPPORTED_CLOCKS`; `--reset-gpu-clocks` undoes it)"
    ),
    "another process on the GPU": "stop the other process on the GPU, or use another GPU",
}


def telemetry_cause(reasons: Iterable[str]) -> Cause | None:
    """The first cause the reasons name, worst kind first (throttling, then a foreign
    process, then clocks changing); None when they name none."""
    found: dict[str, str] = {}
    for reason in reasons:
        for kind, pattern in (
            ("throttling", _THROTTLE),
            ("another process on the GPU", _FOREIGN),
            ("clocks changing", _CLOCKS),
        ):
            if kind not in found and pattern.search(reason):
                found[kind] = reason.strip()
    for kind in ("throttling", "another process on the GPU", "clocks changing"):
        if kind in found:
            repair = _REPAIRS[kind]
            hit = _FOREIGN.search(found[kind]) if kind == "another process on the GPU" else None
            if hit:
                repair = f"stop the other process on the GPU ({hit.group(1)}), or use another GPU"
            return Cause(kind, found[kind], repair)
    return None
