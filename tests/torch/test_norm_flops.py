"""FLOPs of normalisations and softmax come from their formulas (they were counted as one
per element, 5-8× under)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch


def _worker():
    from measure.torch_worker import profiling, workload

    return SimpleNamespace(Workload=workload.Workload, work_and_traffic=profiling.work_and_traffic)


def _flops(tw, fn, x) -> dict:
    w = tw.Workload(fn, [x], {}, {}, None, torch.device("cpu"), None, "t")
    return tw.work_and_traffic(w, False, 0)


@pytest.mark.slow
def test_layer_norm_and_softmax_flops_follow_their_formulas() -> None:
    tw = _worker()
    x = torch.randn(8, 64)
    ln = torch.nn.LayerNorm(64)
    got = _flops(tw, lambda t: ln(t), x)
    assert got["flops_by_kind"]["normalisation"] == 8 * 64 * 7  # with weight and bias
    got = _flops(tw, lambda t: torch.softmax(t, dim=-1), x)
    assert got["flops_by_kind"]["normalisation"] == 8 * 64 * 5
    bare = _flops(tw, lambda t: torch.nn.functional.layer_norm(t, (64,)), x)
    assert bare["flops_by_kind"]["normalisation"] == 8 * 64 * 5
