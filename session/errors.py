"""The session layer's errors: the root families of `measure.errors`, and the method's refusal.

Front ends import them from here: `GpuoptError` catches every one, `LedgerError` (a
`GpuoptError` too) is the ledger's family.
"""

from __future__ import annotations

from collections.abc import Sequence

from measure.errors import BadInput, GpuoptError, WorkFailed

__all__ = ["BadInput", "GateRefused", "GpuoptError", "WorkFailed"]


class GateRefused(GpuoptError):
    """The method refuses a step (a round without a reproducible baseline, a disposition
    without its evidence). `.reasons` lists every unmet condition, `.reason` joins them."""

    def __init__(self, reasons: str | Sequence[str]):
        given = [reasons] if isinstance(reasons, str) else list(reasons)
        self.reasons: list[str] = [r for r in given if r]
        if not self.reasons:
            raise ValueError("a refusal needs a reason")
        self.reason = "; ".join(self.reasons)
        super().__init__(self.reason)
