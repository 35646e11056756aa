"""A bit-identical chunk's counts (NaN, Inf, elements above the floor) are taken in its own
dtype, with no float64 copy of it: the same counts as in float64, at the floor's edge too.
The float64 copy and its passes were most of a 100 MB output's comparison (the check's
timed loop compares each recheck's output: 8 of 19 s of the test_compare_memory job)."""

from __future__ import annotations

import math

import pytest
import torch

from measure.torch_worker.compare import OutputStats


def _float64_counts(rc: torch.Tensor, floor: float) -> tuple[int, int, int]:
    """The oracle: the counts as the float64 way took them."""
    rd = rc.to(torch.float64)
    nan, inf = int(rd.isnan().sum()), int(rd.isinf().sum())
    return nan, inf, int((rd.abs() > floor).sum()) - inf


def _counts(rc: torch.Tensor, floor: float) -> tuple[int, int, int]:
    st = OutputStats("out", exact=False)
    st._identical(rc, floor, 1.0)
    n_big = st.ulp_counted
    return st.s["nan_ref"], st.s["inf_ref"], n_big


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("floor", [1e-5, 1e-8, 0.1, 3.0, 1e-300, 1e6, 0.0])
def test_counts_in_its_own_dtype_match_float64_at_the_edge(dtype, floor) -> None:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4096, generator=g, dtype=torch.float64) * floor * 2 + floor
    at = torch.tensor([floor], dtype=torch.float64).to(dtype)  # the floor, rounded
    edge = torch.cat([at, torch.nextafter(at, at + 1), torch.nextafter(at, at - 1), -at])
    specials = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0], dtype=dtype)
    rc = torch.cat([x.to(dtype), edge.to(dtype), specials])
    assert _counts(rc, floor) == _float64_counts(rc, floor)


def test_integers_and_float64_are_counted_as_before() -> None:
    for rc in (torch.arange(-50, 50), torch.randn(100, dtype=torch.float64)):
        assert _counts(rc, 0.5) == _float64_counts(rc, 0.5)


FLOAT8 = [d for d in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
          if hasattr(torch, d)]  # fmt: skip


@pytest.mark.parametrize("name", FLOAT8)
def test_a_bit_identical_float8_output_is_counted_as_before(name: str) -> None:
    """torch has no isfinite, nextafter or comparison for float8 on the CPU: its chunks
    keep the float64 way (the review found a bit-identical float8 output raised)."""
    rc = torch.randn(1000, generator=torch.Generator().manual_seed(2)).to(getattr(torch, name))
    assert _counts(rc, 1e-3) == _float64_counts(rc, 1e-3)
    st = OutputStats("out", exact=False)
    st.add(0, 1, rc, rc.clone())
    assert st.finish()["bit_identical"]
