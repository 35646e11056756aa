"""The session layer's errors: the root families of `measure.errors`, and the method's own.

One root, few families; a front end maps the family to what it does (the command line's
exit codes live in `tui.cli._run` and nowhere else):

- `BadInput`: what was asked for cannot be (a name, a file, a number). Exit 2.
- `GateRefusal`: the method refuses the step, every unmet condition named. Exit 2.
- `WorkFailed`: the work could not go on (git, a worker, a setup command). Exit 1;
  `ConductError` is a baseline, variant or round that failed so.
- `LedgerError` (in `ledger`, a `GpuoptError` too): the ledger's family.

`GateRefused` is the older name of `GateRefusal`, kept for the modules that import it.
"""

from __future__ import annotations

from collections.abc import Sequence

from measure.errors import BadInput, GpuoptError, WorkFailed

__all__ = [
    "BadInput",
    "ConductError",
    "GateRefusal",
    "GateRefused",
    "GpuoptError",
    "WorkFailed",
]


class GateRefusal(GpuoptError):
    """The method refuses a step (a round without a reproducible baseline, a disposition
    without its evidence). `.reasons` lists every unmet condition, `.reason` joins them."""

    def __init__(self, reasons: str | Sequence[str]):
        given = [reasons] if isinstance(reasons, str) else list(reasons)
        self.reasons: list[str] = [r for r in given if r]
        if not self.reasons:
            raise ValueError("a refusal needs a reason")
        self.reason = "; ".join(self.reasons)
        super().__init__(self.reason)


GateRefused = GateRefusal


class ConductError(WorkFailed):
    """A baseline, variant or round that cannot go on; one clear line for the person."""
