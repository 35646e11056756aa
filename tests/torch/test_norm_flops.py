"""FLOPs of normalisations and softmax come from their formulas (they were counted as one
per element, 5-8× under)."""

from __future__ import annotations

import importlib.util
import sys

import torch

from measure import harness


def _worker():
    spec = importlib.util.spec_from_file_location("gpuopt_worker_flops", harness.WORKER)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _flops(tw, fn, x) -> dict:
    w = tw.Workload(fn, [x], {}, {}, None, torch.device("cpu"), None, "t")
    return tw.work_and_traffic(w, False, 0)


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
