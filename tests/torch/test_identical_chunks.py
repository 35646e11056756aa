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


@pytest.mark.parametrize(
    "special",
    [[math.nan], [math.inf], [-math.inf], [math.inf, -math.inf], [math.nan, math.inf], []],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_a_finite_sum_is_the_fast_way_and_any_special_is_still_counted(dtype, special) -> None:
    """The chunk's sum stands in for isfinite().all(): a NaN or an Inf makes it non-finite,
    and a finite chunk whose sum overflows (float16) is counted the slow way, to zero."""
    finite = torch.randn(1000, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    rc = torch.cat([finite, torch.tensor(special, dtype=torch.float64)]).to(dtype)
    assert _counts(rc, 1e-3) == _float64_counts(rc, 1e-3)
    big = torch.full((100,), torch.finfo(dtype).max / 4, dtype=dtype)  # the sum overflows
    assert _counts(big, 1e-3) == _float64_counts(big, 1e-3) == (0, 0, 100)


@pytest.mark.parametrize("special", [math.nan, math.inf, -math.inf, None])
def test_degeneracy_reads_the_finite_values_only(special) -> None:
    """Its range and sum are over the finite values (a finite chunk's sum is its own): a
    near-constant output with one special in it is still near-constant, a varying one not."""
    from measure.torch_worker.capture import Degeneracy

    for base, constant in ((torch.full((300_000,), 2.5), True), (torch.randn(300_000), False)):
        t = base.clone()
        if special is not None:
            t[123_456] = special
        d = Degeneracy()
        d.add({"out": t})
        assert d.constant["out"] is constant
        (print_,) = d.prints["out"]
        kept = t.to(torch.float64)
        kept = kept[kept.isfinite()]
        assert print_[0] == pytest.approx(float(kept.sum()), rel=1e-12)
