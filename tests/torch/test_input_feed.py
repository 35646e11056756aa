"""The timed loop's fresh inputs: no call sees a data pointer an earlier call saw, even
though the allocator hands a freed set's memory straight back (the usual case), and an
input moved off a repeated address keeps its values, shape, strides and grad flag."""

from __future__ import annotations

from typing import Any

import pytest
import torch


def _feed(make: Any) -> Any:
    from measure.torch_worker import timing, workload

    w = workload.Workload(lambda *a: a[0], [], {}, {}, None, torch.device("cpu"), None, "t")
    w.make_inputs = make
    return timing.InputFeed(w, 3)


def _make(k: int, on_device: bool = False) -> list[Any]:
    g = torch.Generator().manual_seed(k % 2**31)
    wide = torch.randn(512, 2048, generator=g).t()  # 4 MiB, not contiguous
    small = torch.randn(3, generator=g).requires_grad_(True)
    return [wide, small, torch.tensor(k % 1000), 7]


@pytest.mark.slow
def test_no_call_sees_a_data_pointer_an_earlier_call_saw() -> None:
    feed = _feed(_make)
    ptrs: list[int] = []
    for _ in range(60):
        feed.next()
        x, s, t, n = feed.w.inputs
        want = _make((feed.seed * 1_000_003 + 7_777 * feed.k) % 2**62)
        assert torch.equal(x, want[0]) and torch.equal(s, want[1]) and torch.equal(t, want[2])
        assert x.shape == want[0].shape and x.stride() == want[0].stride()
        assert s.requires_grad and s.is_leaf and not x.requires_grad and n == 7
        ptrs += [x.data_ptr(), s.data_ptr(), t.data_ptr()]
    assert len(set(ptrs)) == len(ptrs)
    assert feed.repeats_avoided > 0  # the allocator did hand memory back: the case is tested


def test_the_last_set_is_gone_before_an_input_moves() -> None:
    """No whole extra set is held: the last set is freed before the new one is made, and
    inputs move one at a time off repeated addresses."""
    from measure.torch_worker import timing

    alive: list[int] = []
    real = timing.InputFeed._moved

    def counting(self: Any, x: torch.Tensor) -> torch.Tensor:
        alive.append(sum(1 for y in self.w.inputs if isinstance(y, torch.Tensor)))
        return real(self, x)

    def make(k: int, on_device: bool = False) -> list[Any]:
        return [torch.full((1 << 20,), float(k % 1000)) for _ in range(3)]

    feed = _feed(make)
    timing.InputFeed._moved = counting  # type: ignore[method-assign]
    try:
        for _ in range(20):
            feed.next()
            assert len({x.data_ptr() for x in feed.w.inputs}) == 3
    finally:
        timing.InputFeed._moved = real  # type: ignore[method-assign]
    assert alive and max(alive) == 0  # the last set was gone before any input moved
