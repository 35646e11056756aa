"""The range of every number a person gives gpuopt, in one place.

A front end reads a range here, shows it (the command line in each option's help) and
refuses a number outside it with `out_of_range`, in one line, before any work starts: a
`--runs 99999999999999999999` must never be accepted and then sit planning runs.
Imports nothing, so `gpuopt --help` stays light.
"""

from __future__ import annotations

from dataclasses import dataclass

SQLITE_INT_MAX = 2**63 - 1  # a seed is stored as a SQLite integer


@dataclass(frozen=True)
class Range:
    low: float
    high: float
    integer: bool = True
    low_open: bool = False  # the low end itself is not allowed (a time must be > 0)

    def text(self) -> str:
        def num(x: float) -> str:
            whole = self.integer or float(x).is_integer()
            return f"{int(x):,}".replace(",", "_") if whole else f"{x:g}"

        low = f"above {num(self.low)}" if self.low_open else f"{num(self.low)}"
        return f"{low} to {num(self.high)}"

    def holds(self, value: float) -> bool:
        if value != value:  # NaN
            return False
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high


DAY_S = 86_400.0

# option name (as the command line spells it, without dashes) -> its range
RANGES: dict[str, Range] = {
    "runs": Range(2, 100_000),
    "max-runs": Range(2, 100_000),
    "warmup": Range(0, 10_000),
    "min-blocks": Range(2, 100_000),
    "max-blocks": Range(2, 100_000),
    "blocks": Range(2, 100_000),
    "seed": Range(0, SQLITE_INT_MAX),
    "steps": Range(1, 10_000),
    "port": Range(1, 65_535),
    "timeout": Range(0, 30 * DAY_S, integer=False, low_open=True),
    "budget": Range(0, 365 * DAY_S, integer=False, low_open=True),
    "seconds": Range(0, 365 * DAY_S, integer=False),
    "interval": Range(0.05, 3_600, integer=False),
    "checklist": Range(1, 14),
}


def range_of(name: str) -> Range:
    return RANGES[name]


def out_of_range(name: str, value: float) -> str | None:
    """Why `value` cannot be given for the option `name` (one line), or None."""
    r = RANGES[name]
    if r.holds(value):
        return None
    return f"--{name} {value}: out of range, give {r.text()}"
