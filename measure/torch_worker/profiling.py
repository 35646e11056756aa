"""The `profile` mode: FLOPs and bytes of one step, the machine's ceilings, the trace."""

from __future__ import annotations

import math
import statistics
import sys
import time
from typing import Any

import torch

from .base import _first_float_dtype
from .tables import (
    _MOVING_OPS,
    _NO_TRAFFIC_OPS,
    PROFILE_ROWS,
    SEQUENCE_MAX,
    STEP_RANGE,
    TENSOR_ROWS,
    _boundaries,
    _device_events,
    _frequent_boundary,
    _kernel_table,
    _live_peak,
    _numel,
    _op_tables,
    _pairs,
    _per_step,
    _shared,
    _short_dtype,
    _tensor_list,
    _tree_tables,
)
from .timing import _sync
from .workload import Workload, step

# FLOPs per input element of the normalisations and softmax, from their formulas (the flop
# counter sees only matmul-like ops; one per element undercounted them 5-8×):
# softmax: max, subtract, exp, sum, divide; layer/group norm: mean, subtract, square, sum,
# scale by rstd (+ multiply and add for the affine parameters); batch norm at inference:
# subtract, scale, multiply, add (+3 for the statistics in training); rms norm: square,
# sum, scale, multiply.
NORM_FLOPS = {
    "_softmax": 5,
    "softmax": 5,
    "_log_softmax": 5,
    "log_softmax": 5,
    "_safe_softmax": 5,
    "native_layer_norm": 5,
    "native_group_norm": 5,
    "native_batch_norm": 4,
    "_native_batch_norm_legit": 7,
    "_native_batch_norm_legit_no_training": 4,
    "_fused_rms_norm": 4,
    "rms_norm": 4,
}


def _norm_flops(base: str, args: Any) -> int:
    x = args[0] if args and isinstance(args[0], torch.Tensor) else None
    if x is None:
        return 0
    per = NORM_FLOPS[base]
    affine = base in ("native_layer_norm", "native_group_norm") and any(
        isinstance(a, torch.Tensor) for a in args[1:4]
    )
    return int(x.numel()) * (per + (2 if affine else 0))


def work_and_traffic(w: Workload, training: bool, seed: int) -> dict[str, Any]:
    """FLOPs of one step (torch.utils.flop_counter for matmul, convolution and attention; the
    element count for elementwise ops and reductions) and a lower bound on the bytes it moves
    (the inputs and outputs of every op that is not a view), seen at the dispatcher."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode, flop_registry

    per_op: dict[str, dict[str, Any]] = {}

    class Traffic(TorchDispatchMode):
        def __torch_dispatch__(
            self, func: Any, _types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            out = func(*args, **(kwargs or {}))
            base = func.overloadpacket.__name__
            if getattr(func, "is_view", False) or base in _NO_TRAFFIC_OPS:
                return out
            ins = _tensor_list(args) + _tensor_list(kwargs or {})
            outs = _tensor_list(out)
            nbytes = sum(_numel(t) * t.element_size() for t in ins + outs)
            tags = set(getattr(func, "tags", ()) or ())
            if base in NORM_FLOPS:
                kind, flops = "normalisation", _norm_flops(base, args)
            elif func.overloadpacket in flop_registry:
                kind, flops = "matmul", 0  # counted by FlopCounterMode
            elif base in _MOVING_OPS:
                kind, flops = "movement", 0
            elif torch.Tag.pointwise in tags:
                kind, flops = "elementwise", max((_numel(t) for t in outs), default=0)
            elif torch.Tag.reduction in tags:
                kind, flops = "reduction", max((_numel(t) for t in ins), default=0)
            else:
                kind, flops = "estimated", max((_numel(t) for t in ins + outs), default=0)
            name = "aten::" + base
            entry = per_op.setdefault(
                name, {"name": name, "calls": 0, "flops": 0, "bytes": 0, "kind": kind}
            )
            entry["calls"] += 1
            entry["flops"] += flops
            entry["bytes"] += nbytes
            return out

    with FlopCounterMode(display=False) as counter, Traffic():
        outs = step(w, training, seed)
    _sync(w.device)
    # What any implementation must move at least: read its inputs, write its outputs (the
    # roofline floor's bytes; the per-op sum above is what this one moves, unfused).
    io = _tensor_list(w.inputs) + _tensor_list(outs)
    io_bytes = sum(_numel(t) * t.element_size() for t in io)
    del outs
    counted = counter.get_flop_counts().get("Global", {})
    for packet, flops in counted.items():
        name = "aten::" + getattr(packet, "__name__", str(packet)).split(".")[-1]
        entry = per_op.setdefault(
            name, {"name": name, "calls": 0, "flops": 0, "bytes": 0, "kind": "matmul"}
        )
        entry["flops"] += int(flops)
    rows = sorted(per_op.values(), key=lambda d: (-d["bytes"], d["name"]))
    kinds = ("matmul", "normalisation", "elementwise", "reduction", "estimated")
    by_kind = {k: sum(r["flops"] for r in rows if r["kind"] == k) for k in kinds}
    return {
        "flops": int(sum(r["flops"] for r in rows)),
        "flops_by_kind": by_kind,
        "bytes": int(sum(r["bytes"] for r in rows)),
        "io_bytes": int(io_bytes),
        "by_op": rows[:PROFILE_ROWS],
        "source": "torch.utils.flop_counter for matmul/convolution/attention; normalisations and "
        "softmax from their formulas (per element: softmax 5, layer norm 5 + 2 with its affine "
        "parameters, batch norm 4, rms norm 4); element counts for the rest; bytes: inputs "
        "and outputs of every op that is not a view, at the dispatcher; io_bytes: the step's own "
        "inputs and outputs (what any implementation moves)",
    }


def _best_seconds(fn: Any, device: torch.device, repeats: int) -> float:
    fn()
    _sync(device)
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return best


_PROBES: dict[str, dict[str, Any]] = {}


def _copy_seconds(nbytes: int, device: torch.device) -> float:
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    return _best_seconds(lambda: dst.copy_(src), device, 5)


def _matmul_seconds(n: int, dtype: torch.dtype, device: torch.device) -> float:
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    return _best_seconds(lambda: torch.mm(a, b), device, 3)


def machine_probe(device: torch.device, dtype: torch.dtype | None) -> dict[str, Any]:
    """Quick measured ceilings of this machine: a copy (bandwidth), a large matmul (FLOP/s) and
    a one-element op (the cost of one launch). Best of a few tries; once per process."""
    floats = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
    mm_dtype = dtype if dtype in floats else torch.float32
    key = f"{device}:{mm_dtype}"
    if key in _PROBES:
        return _PROBES[key]
    gpu = device.type == "cuda"
    nbytes = (512 if gpu else 64) << 20
    n = 8192 if gpu else 1024
    copy_s = _copy_seconds(nbytes, device)
    mm_s = _matmul_seconds(n, mm_dtype, device)
    tiny = torch.zeros(1, device=device)
    calls = 200

    def launches() -> None:
        for _ in range(calls):
            tiny.add_(1)

    launch_s = _best_seconds(launches, device, 3) / calls
    found = {
        "bandwidth_bytes_per_s": 2 * nbytes / copy_s,
        "flops_per_s": 2.0 * n**3 / mm_s,
        "flops_dtype": _short_dtype(mm_dtype),
        "launch_s": launch_s,
        "copy_bytes": nbytes,
        "matmul_n": n,
        "threads": torch.get_num_threads(),
        "how": f"copy of {nbytes >> 20} MiB (read + write), {n}x{n} matmul in "
        f"{_short_dtype(mm_dtype)}, {calls} one-element in-place adds; best of a few tries",
    }
    _PROBES[key] = found
    return found


def _dynamo_state() -> dict[str, dict[str, int]]:
    """torch._dynamo's counters now (empty when the workload never used torch.compile)."""
    if "torch._dynamo" not in sys.modules:
        return {}
    try:
        from torch._dynamo.utils import counters
    except Exception:
        return {}
    return {k: {str(n): int(c) for n, c in dict(v).items()} for k, v in counters.items()}


def _dynamo_counts(before: dict[str, dict[str, int]]) -> dict[str, Any] | None:
    """Graph breaks and recompilations since `before` (the counters are per process: a batch
    runs several workloads in one), when the workload used torch.compile."""
    now = _dynamo_state()

    def grew(key: str) -> dict[str, int]:
        old = before.get(key, {})
        return {n: c - old.get(n, 0) for n, c in now.get(key, {}).items() if c > old.get(n, 0)}

    frames = grew("frames")
    if not frames:
        return None
    breaks = grew("graph_break")
    return {
        "graph_breaks": sum(breaks.values()),
        # The reason's first two lines: what failed, then the explanation naming the call.
        "break_reasons": [
            " — ".join(ln.strip() for ln in k.splitlines()[:2] if ln.strip())[:300]
            for k in list(breaks)[:5]
        ],
        "unique_graphs": grew("stats").get("unique_graphs", 0),
        "frames": frames.get("total", 0),
        "recompiles": sum(grew("recompiles").values()),
    }


def _clean_row(r: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in r.items() if not k.startswith("_")}


def profile_workload(
    w: Workload,
    training: bool,
    seed: int,
    trace: str | None = None,
    probe: bool = True,
    steps: int = 3,
) -> dict[str, Any]:
    """Where the time and the bytes of one step go, in a pass of its own (profiling distorts
    timing): operators (and kernels on a GPU), launches, the intermediate tensors, write/read
    pairs, FLOPs and bytes, and this machine's measured ceilings."""
    from torch.profiler import ProfilerActivity, profile

    result: dict[str, Any] = {"profile_version": 1, "notes": []}
    compiled_before = _dynamo_state()
    step(w, training, seed)  # warm-up: lazy initialisation is not the workload's cost
    _sync(w.device)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        step(w, training, seed)
        _sync(w.device)
        times.append((time.perf_counter() - t0) * 1e3)
    # The fastest call: on a shared CPU the median swings with the neighbours' load.
    result["step_ms"] = min(times)
    result["step_ms_median"] = statistics.median(times)
    result["step_ms_samples"] = [round(t, 6) for t in times]
    activities = [ProfilerActivity.CPU]
    gpu = w.device.type == "cuda"
    if gpu:
        activities.append(ProfilerActivity.CUDA)
    history = None
    recorder = getattr(getattr(torch.cuda, "memory", None), "_record_memory_history", None)
    if gpu and trace and recorder is not None:
        try:
            torch.cuda.memory._record_memory_history(max_entries=100000)
            history = trace.removesuffix(".json") + ".memory.pickle"
        except Exception as exc:
            result["notes"].append(f"no CUDA memory history: {type(exc).__name__}: {exc}")
    from torch.profiler import record_function

    outs: Any = None
    with profile(
        activities=activities, record_shapes=True, profile_memory=True, with_stack=False
    ) as prof:
        for _ in range(steps):
            outs = None  # the last step's outputs stay alive: they are outputs, not temporaries
            with record_function(STEP_RANGE):
                outs = step(w, training, seed)
                _sync(w.device)
    if history is not None:
        try:
            torch.cuda.memory._dump_snapshot(history)
            torch.cuda.memory._record_memory_history(enabled=None)
            result["memory_history"] = history
        except Exception as exc:
            result["notes"].append(f"no CUDA memory history: {type(exc).__name__}: {exc}")
    tables = _tree_tables(prof, _tensor_list(list(outs.values())))
    del outs
    result["profiled_steps"] = steps
    computing = [tables["ops"][i]["name"] for i in tables["computing"]]
    result["operator_count"] = len(computing)
    result["sequence"] = computing[:SEQUENCE_MAX]
    result.update(_op_tables(prof, w.device, steps))
    if gpu:
        events = prof.events()
        kernels, copies = _device_events(events)
        result["launch_source"] = "CUDA kernels"
        if not kernels and not copies:  # no device activity recorded (no CUPTI): the launches
            kernels = [(e.name, 0.0) for e in events if "LaunchKernel" in e.name]
            result["launch_source"] = "runtime launch calls (no kernel times)"
        result["kernels"] = _kernel_table(kernels, steps)
        result["launches"] = _per_step(len(kernels), steps)
        result["memcpy_memset"] = _per_step(len(copies), steps)
        ranked = result["kernels"]
    else:
        result["launches"] = len(computing)
        result["launch_source"] = "computing top-level aten ops (CPU)"
        ranked = result["ops_by_name"]
    if ranked:
        head = ranked[0]
        result["dominant"] = {k: head[k] for k in ("name", "share", "self_us", "calls")}
    rows = tables["rows"]
    result["tensor_count"] = len(rows)
    result["intermediate_count"] = sum(1 for r in rows if r["kind"] == "intermediate")
    result["intermediates"] = [_clean_row(r) for r in rows[:TENSOR_ROWS]]
    largest = next((r for r in rows if r["kind"] == "intermediate"), None)
    result["largest_intermediate"] = _clean_row(largest) if largest else None
    result["live_peak"] = _live_peak(rows, tables["moves"])
    every_pair = _pairs(tables)
    result["pairs"] = every_pair[:TENSOR_ROWS]
    result["pair_count"] = len(every_pair)  # the one count of pairs, whatever is listed
    result["shared_intermediates"] = _shared(tables)[:TENSOR_ROWS]
    bounds = _boundaries(tables)
    result["boundaries"] = bounds[:10]
    result["most_frequent_boundary"] = _frequent_boundary(bounds)
    if trace:
        try:
            prof.export_chrome_trace(trace)
            result["trace"] = trace
        except Exception as exc:
            result["notes"].append(f"the trace could not be written: {type(exc).__name__}: {exc}")
    del prof
    try:
        result["work"] = work_and_traffic(w, training, seed)
    except Exception as exc:
        result["work"] = None
        result["notes"].append(f"FLOPs and bytes not counted: {type(exc).__name__}: {exc}")
    if probe:
        result["probe"] = machine_probe(w.device, w.dtype or _first_float_dtype(w.inputs))
    dynamo = _dynamo_counts(compiled_before)
    if dynamo is not None:
        result["dynamo"] = dynamo
    return result
