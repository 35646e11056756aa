"""A failed seed's headline names NaN/Inf first: the demo's max-less softmax read
"failed on seed N: out max abs 3.58e-07, 80 mismatches" while its 80 mismatches were NaN."""

from __future__ import annotations

from session import models as m
from session.torch_checks import headline


def _failed(**kw: object) -> m.ErrorStats:
    base = {"passed": False, "worst_seed": 7, "max_abs": 3.58e-7, "mismatches": 80,
            "mismatch_share": 0.0001}  # fmt: skip
    return m.ErrorStats(**{**base, **kw})  # type: ignore[arg-type]


def test_nan_is_said_before_the_finite_error() -> None:
    line = headline({"passed": False}, [_failed(nan_ref=0, nan_new=80)])
    assert line.startswith("failed on seed 7: out NaN 0→80, max abs")


def test_inf_too_and_nothing_when_finite() -> None:
    assert "Inf 0→3, " in headline({"passed": False}, [_failed(inf_new=3)])
    plain = headline({"passed": False}, [_failed()])
    assert "NaN" not in plain and "Inf" not in plain and "max abs 3.58e-07" in plain
