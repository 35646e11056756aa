"""The `audit` mode: kernels, operators, allocations and peak memory of one step."""

from __future__ import annotations

from typing import Any

import torch

from .base import _MAYBE_VIEW_OPS, _VIEW_OPS
from .tables import _device_events
from .timing import _sync
from .workload import Workload, step


def _vmhwm_reset() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _vmhwm_bytes() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _top_level_ops(events: Any) -> tuple[list[str], list[str]]:
    """(computing top-level aten ops, every top-level aten op) in call order."""
    computing: list[str] = []
    every: list[str] = []
    for e in events:
        name = e.name
        if not name.startswith("aten::"):
            continue
        parent = e.cpu_parent
        nested = False
        while parent is not None:
            if parent.name.startswith("aten::"):
                nested = True
                break
            parent = parent.cpu_parent
        if nested:
            continue
        every.append(name)
        if name in _VIEW_OPS:
            continue
        if name in _MAYBE_VIEW_OPS and not _computes_below(e):
            continue
        computing.append(name)
    return computing, every


def _computes_below(e: Any) -> bool:
    for c in e.cpu_children:
        if c.name.startswith("aten::") and (
            c.name not in _VIEW_OPS and (c.name not in _MAYBE_VIEW_OPS or _computes_below(c))
        ):
            return True
    return False


def _counts(names: list[str]) -> list[dict[str, Any]]:
    tally: dict[str, int] = {}
    for n in names:
        tally[n] = tally.get(n, 0) + 1
    return [{"name": k, "count": v} for k, v in sorted(tally.items(), key=lambda kv: -kv[1])]


def audit_workload(w: Workload, training: bool, seed: int) -> dict[str, Any]:
    """Operators, kernel launches, allocations and peak memory of one call (after a warm-up)."""
    # The profiler under torch.profiler.profile: that wrapper's start asks
    # hasattr(torch, "_inductor"), which imports inductor, dynamo and sympy (1 s of every
    # audit process) to read a cudagraphs setting that matters only to compiled code.
    from torch.autograd.profiler import profile

    step(w, training, seed)  # warm-up: lazy initialisation is not the workload's cost
    _sync(w.device)
    result: dict[str, Any] = {"notes": []}
    # Memory first, without the profiler.
    if w.device.type == "cuda":
        stats_before = torch.cuda.memory_stats(w.device)
        if hasattr(torch.cuda, "reset_peak_memory_stats"):
            torch.cuda.reset_peak_memory_stats(w.device)
        step(w, training, seed)
        _sync(w.device)
        stats = torch.cuda.memory_stats(w.device)
        result["allocation_count"] = int(
            stats.get("allocation.all.allocated", 0)
            - stats_before.get("allocation.all.allocated", 0)
        )
        result["peak_bytes"] = int(stats.get("allocated_bytes.all.peak", 0))
        result["allocated_bytes"] = int(
            stats.get("allocated_bytes.all.allocated", 0)
            - stats_before.get("allocated_bytes.all.allocated", 0)
        )
        result["peak_source"] = "torch.cuda.memory_stats allocated_bytes.all.peak"
    else:
        # The whole process's high-water mark, torch included: kept, but not the step's peak
        # (the profiler's allocation events below give that).
        reset = _vmhwm_reset()
        step(w, training, seed)
        peak = _vmhwm_bytes()
        result["process_peak_bytes"] = peak if reset else None
        if not reset:
            result["notes"].append("could not reset VmHWM (/proc/self/clear_refs): no process peak")
    # Then operators and kernels under the profiler.
    use_device = "cuda" if w.device.type == "cuda" else None  # CPU and CUDA activities
    w.zero_grads() if training else None
    with profile(use_device=use_device, profile_memory=use_device is None, use_kineto=True) as prof:
        step(w, training, seed)
        _sync(w.device)
    events = prof.function_events
    computing, every = _top_level_ops(events)
    result["operator_count"] = len(computing)
    result["operators_with_views"] = len(every)
    top = [dict(d, kind="op") for d in _counts(computing)[:12]]
    if w.device.type == "cuda":
        found_kernels, found_copies = _device_events(events)
        kernels = [name for name, _ in found_kernels]
        copies = [name for name, _ in found_copies]
        if not kernels and not copies:
            runtime = [e.name for e in events if "LaunchKernel" in e.name]
            if runtime:
                kernels = runtime
                result["notes"].append("kernel count from runtime launch calls")
        result["kernel_launches"] = len(kernels)
        result["memcpy_memset"] = len(copies)
        top += [dict(d, kind="kernel") for d in _counts(kernels)[:12]]
    else:
        result["kernel_launches"] = len(computing)
        result["notes"].append("CPU: kernel launches are computing top-level aten ops")
        try:
            sizes = [
                int(k.nbytes())
                for k in prof.kineto_results.events()  # type: ignore[union-attr,unused-ignore]
                if k.name() == "[memory]"
            ]
            result["allocation_count"] = sum(1 for b in sizes if b > 0)
            result["allocated_bytes"] = sum(b for b in sizes if b > 0)
            # The step's own peak: the running sum of allocations and frees, in call order.
            live = top_live = 0
            for b in sizes:
                live += b
                top_live = max(top_live, live)
            result["peak_bytes"] = top_live
            result["peak_source"] = "profiler allocation events of one call (step peak)"
        except Exception:
            result["allocation_count"] = None
            result["peak_bytes"] = None
            result["notes"].append("allocation figures not available from this torch")
    result["top_ops"] = top
    return result
