"""gpuopt's PyTorch worker: time, audit or capture one workload, print one JSON line.

A self-contained script (standard library and torch only), run by path with the project's
own interpreter, so a GPU box's venv can run it without gpuopt installed there:

    python torch_worker.py time     --kind torch --spec pkg.mod:bench
    python torch_worker.py audit    --kind kernelbench --spec problems/softmax.py
    python torch_worker.py outputs  --kind torch --spec pkg.mod:bench --save out.pt \
                                    [--compare-to ref.pt] [--trials 5] [--seed 0]

The working directory is the checkout (a snapshot's worktree); it goes first on sys.path.
Workload kinds (docs/torch_workloads.md has the whole protocol):

- torch: MODULE:CALLABLE names a factory `bench(device, dtype, seed, training)` (it may
  accept any subset of those keywords) returning a dict: `fn` (the callable to time),
  `inputs` (its positional arguments), optionally `kwargs`, `params` (tensors, or a dict of
  named tensors, whose gradients a training path compares), `names` (output names).
- kernelbench: PATH is a KernelBench problem file: `class Model(nn.Module)`, `get_inputs()`,
  `get_init_inputs()`; `ModelNew` is used when the file defines it. The model is built right
  after seeding, and the inputs after seeding again, on both sides alike.

The last line on stdout is one JSON object with "gpuopt_worker": MODE. On failure it carries
"error" (one line) and "traceback", and the exit status is 1 (2 for bad arguments).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import math
import os
import statistics
import sys
import time
import traceback
from typing import Any

import torch

METRIC_KEY = "gpuopt_value"

# torch.testing.assert_close defaults (rtol, atol) by dtype; integers and bool are exact.
_TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
    # Not covered by assert_close: one unit of the format's precision, ours.
    "float8_e4m3fn": (1.25e-1, 1e-3),
    "float8_e4m3fnuz": (1.25e-1, 1e-3),
    "float8_e5m2": (2.5e-1, 1e-3),
    "float8_e5m2fnuz": (2.5e-1, 1e-3),
}

# Ops that never compute: they only make a new view of existing storage.
_VIEW_OPS = frozenset(
    "aten::" + n
    for n in (
        "view",
        "_reshape_alias",
        "_unsafe_view",
        "as_strided",
        "expand",
        "expand_as",
        "permute",
        "transpose",
        "t",
        "unsqueeze",
        "squeeze",
        "slice",
        "select",
        "narrow",
        "alias",
        "detach",
        "view_as",
        "diagonal",
        "unflatten",
        "lift_fresh",
        "unbind",
        "split",
        "split_with_sizes",
        "chunk",
        "movedim",
        "swapaxes",
        "numpy_T",
        "real",
        "imag",
        "view_as_real",
        "view_as_complex",
        "_neg_view",
        "_conj",
        "conj",
        "resolve_conj",
        "resolve_neg",
        "unfold",
        "indices",
        "values",
        "result_type",
    )
)
# Ops that are views unless they had to copy (then a computing child op shows it).
_MAYBE_VIEW_OPS = frozenset(
    "aten::" + n
    for n in (
        "reshape",
        "flatten",
        "contiguous",
        "to",
        "_to_copy_if_needed",
        "type_as",
        "broadcast_to",
        "expand_copy_if_needed",
    )
)


class WorkloadError(Exception):
    """The workload could not be loaded or run; the message is one line."""


# ---------------------------------------------------------------------------- loading


def _dtype(name: str | None) -> torch.dtype | None:
    if not name or name in ("auto", "default", "none"):
        return None
    value = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(value, torch.dtype):
        raise WorkloadError(f"unknown dtype {name!r}")
    return value


def _device(name: str | None) -> torch.device:
    if not name or name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise WorkloadError(f"device {name} asked for, but this torch sees no CUDA device")
        if device.index is None:  # record which GPU: "cuda:0", not "cuda"
            device = torch.device("cuda", torch.cuda.current_device())
    return device


def _seed_all(seed: int) -> None:
    torch.manual_seed(seed)  # also seeds every CUDA device
    import random

    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % 2**32)
    except Exception:
        pass


def _to(value: Any, device: torch.device, dtype: torch.dtype | None) -> Any:
    if isinstance(value, torch.Tensor):
        if dtype is not None and value.is_floating_point():
            return value.to(device=device, dtype=dtype)
        return value.to(device=device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to(v, device, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _to(v, device, dtype) for k, v in value.items()}
    return value


class Workload:
    """What the worker runs: a callable, its inputs, and the tensors to take gradients of."""

    def __init__(
        self,
        fn: Any,
        inputs: list[Any],
        kwargs: dict[str, Any],
        params: dict[str, torch.Tensor],
        names: list[str] | None,
        device: torch.device,
        dtype: torch.dtype | None,
        source: str,
    ):
        self.fn = fn
        self.inputs = inputs
        self.kwargs = kwargs
        self.params = params
        self.names = names
        self.device = device
        self.dtype = dtype
        self.source = source
        self.cotangents: dict[str, torch.Tensor] = {}

    def __call__(self) -> Any:
        return self.fn(*self.inputs, **self.kwargs)

    def grad_leaves(self) -> dict[str, torch.Tensor]:
        leaves: dict[str, torch.Tensor] = {}
        for i, x in enumerate(self.inputs):
            if isinstance(x, torch.Tensor) and x.requires_grad:
                leaves[f"input[{i}]"] = x
        for name, p in self.params.items():
            if isinstance(p, torch.Tensor) and p.requires_grad:
                leaves[f"param:{name}"] = p
        return leaves

    def zero_grads(self) -> None:
        for t in self.grad_leaves().values():
            t.grad = None


def _import_root(root: str) -> None:
    root = os.path.abspath(root)
    if root in sys.path:
        sys.path.remove(root)
    sys.path.insert(0, root)


def load_workload(
    kind: str,
    spec: str,
    root: str,
    device: torch.device,
    dtype: torch.dtype | None,
    seed: int,
    training: bool,
) -> Workload:
    _import_root(root)
    if kind == "torch":
        return _load_callable(spec, device, dtype, seed, training)
    if kind == "kernelbench":
        return _load_kernelbench(spec, root, device, dtype, seed, training)
    raise WorkloadError(f"unknown workload kind {kind!r} (torch or kernelbench)")


def _load_callable(
    spec: str, device: torch.device, dtype: torch.dtype | None, seed: int, training: bool
) -> Workload:
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise WorkloadError(f"torch workload must be MODULE:CALLABLE, not {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise WorkloadError(f"cannot import {module_name}: {type(exc).__name__}: {exc}") from exc
    factory: Any = module
    for part in attr.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            raise WorkloadError(f"{module_name} has no attribute {attr}")
    if not callable(factory):
        raise WorkloadError(f"{spec} is not callable")
    offered = {
        "device": device,
        "dtype": dtype or torch.float32,
        "seed": seed,
        "training": training,
    }
    try:
        sig = inspect.signature(factory)
        if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
            kwargs = offered
        else:
            kwargs = {k: v for k, v in offered.items() if k in sig.parameters}
    except (TypeError, ValueError):
        kwargs = {}
    _seed_all(seed)
    made = factory(**kwargs)
    if callable(made) and not isinstance(made, dict):
        made = {"fn": made, "inputs": []}
    if not isinstance(made, dict) or not callable(made.get("fn")):
        raise WorkloadError(f"{spec} must return a dict with a callable 'fn' and 'inputs'")
    inputs = list(made.get("inputs") or [])
    params_raw = made.get("params") or {}
    if isinstance(params_raw, torch.nn.Module):
        params: dict[str, Any] = dict(params_raw.named_parameters())
    elif isinstance(params_raw, dict):
        params = dict(params_raw)
    else:
        params = {str(i): p for i, p in enumerate(params_raw)}
    if (
        training
        and not params
        and not any(isinstance(x, torch.Tensor) and x.requires_grad for x in inputs)
    ):
        inputs = [
            x.detach().requires_grad_(True)
            if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())
            else x
            for x in inputs
        ]
    if not training:
        for p in params.values():
            if isinstance(p, torch.Tensor) and p.is_leaf:
                p.requires_grad_(False)
    names = made.get("names")
    return Workload(
        made["fn"],
        inputs,
        dict(made.get("kwargs") or {}),
        params,
        list(names) if names else None,
        device,
        dtype,
        spec,
    )


def _load_kernelbench(
    spec: str,
    root: str,
    device: torch.device,
    dtype: torch.dtype | None,
    seed: int,
    training: bool,
) -> Workload:
    path = spec if os.path.isabs(spec) else os.path.join(root, spec)
    if not os.path.isfile(path):
        raise WorkloadError(f"no problem file {spec} in {root}")
    mod_name = "gpuopt_problem_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    module_spec = importlib.util.spec_from_file_location(mod_name, path)
    if module_spec is None or module_spec.loader is None:
        raise WorkloadError(f"cannot load {spec}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[mod_name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        raise WorkloadError(f"cannot import {spec}: {type(exc).__name__}: {exc}") from exc
    cls = getattr(module, "ModelNew", None) or getattr(module, "Model", None)
    for name in ("get_inputs", "get_init_inputs"):
        if not callable(getattr(module, name, None)):
            raise WorkloadError(f"{spec} has no {name}()")
    if cls is None:
        raise WorkloadError(f"{spec} defines neither ModelNew nor Model")
    _seed_all(seed)
    init = list(module.get_init_inputs())
    _seed_all(seed)
    model = cls(*init)
    model = model.to(device=device)
    if dtype is not None:
        model = model.to(dtype=dtype)
    model.train(training)
    if not training:
        model.requires_grad_(False)
    _seed_all(seed)
    inputs = _to(list(module.get_inputs()), device, dtype)
    if training:
        inputs = [
            x.detach().requires_grad_(True)
            if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())
            else x
            for x in inputs
        ]
    params: dict[str, torch.Tensor] = dict(model.named_parameters()) if training else {}
    used = "ModelNew" if getattr(module, "ModelNew", None) is not None else "Model"
    return Workload(model, inputs, {}, params, None, device, dtype, f"{spec}:{used}")


# ---------------------------------------------------------------------------- running


def _flatten(value: Any, prefix: str, out: dict[str, torch.Tensor]) -> None:
    if isinstance(value, torch.Tensor):
        out[prefix] = value
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _flatten(v, f"{prefix}[{i}]", out)
    elif isinstance(value, dict):
        for k, v in value.items():
            _flatten(v, f"{prefix}.{k}", out)
    elif isinstance(value, (int, float, bool, complex)):
        out[prefix] = torch.tensor(value)
    elif value is None:
        pass
    elif hasattr(value, "_fields"):  # a named tuple such as torch.return_types
        for k in value._fields:
            _flatten(getattr(value, k), f"{prefix}.{k}", out)


def named_outputs(result: Any, names: list[str] | None) -> dict[str, torch.Tensor]:
    flat: dict[str, torch.Tensor] = {}
    _flatten(result, "out", flat)
    if names and len(names) == len(flat):
        return dict(zip(names, flat.values(), strict=True))
    return flat


def _backward(w: Workload, outputs: dict[str, torch.Tensor], seed: int) -> None:
    """Backward through every differentiable output with fixed random cotangents.

    The cotangents come from their own generator (seed + 7919), made once per output and kept,
    so neither timing nor audits see their creation; both sides of a check use the same ones.
    """
    tensors, grads = [], []
    for name, t in outputs.items():
        if t.requires_grad and (t.is_floating_point() or t.is_complex()):
            g = w.cotangents.get(name)
            if g is None or g.shape != t.shape or g.dtype != t.dtype or g.device != t.device:
                gen = torch.Generator().manual_seed(seed + 7919 + len(w.cotangents))
                g = torch.randn(t.shape, generator=gen, dtype=torch.float32)
                g = g.to(device=t.device, dtype=t.dtype)
                w.cotangents[name] = g
            tensors.append(t)
            grads.append(g)
    if not tensors:
        raise WorkloadError("training path: no output requires grad")
    torch.autograd.backward(tensors, grads)


def step(w: Workload, training: bool, seed: int) -> dict[str, torch.Tensor]:
    if training:
        w.zero_grads()
        outs = named_outputs(w(), w.names)
        _backward(w, outs, seed)
        return outs
    with torch.no_grad():
        return named_outputs(w(), w.names)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _l2_buffer(device: torch.device) -> torch.Tensor | None:
    if device.type != "cuda":
        return None
    l2 = 0
    try:
        l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
    except Exception:
        l2 = 0
    nbytes = max(2 * l2, 64 * 2**20)  # twice the L2 (or 64 MiB when unknown)
    return torch.empty(nbytes // 4, dtype=torch.int32, device=device)


def time_workload(
    w: Workload,
    training: bool,
    seed: int,
    warmup: int,
    min_samples: int,
    max_samples: int,
    min_time_s: float,
    l2_flush: bool = True,
    stat: str = "median",
) -> dict[str, Any]:
    """Median milliseconds per call: CUDA events around each call after an L2 flush on a GPU,
    perf_counter on a CPU. Warm-up calls are not counted."""
    for _ in range(max(0, warmup)):
        step(w, training, seed)
    _sync(w.device)
    samples: list[float] = []
    flush = _l2_buffer(w.device) if l2_flush else None
    cuda_events = w.device.type == "cuda" and hasattr(torch.cuda, "Event")
    if cuda_events:
        pairs: list[tuple[Any, Any]] = []
        started = time.perf_counter()
        while len(pairs) < max_samples and (
            len(pairs) < min_samples or time.perf_counter() - started < min_time_s
        ):
            if training:
                w.zero_grads()
            if flush is not None:
                flush.zero_()  # evict the L2 so each call starts cold, as in a real step
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step(w, training, seed)
            end.record()
            pairs.append((start, end))
            if len(pairs) % 16 == 0:
                _sync(w.device)  # keep the queue short so the wall-clock budget holds
        _sync(w.device)
        samples = [s.elapsed_time(e) for s, e in pairs]  # milliseconds
        clock = "cuda_event"
    else:
        started = time.perf_counter()
        while len(samples) < max_samples and (
            len(samples) < min_samples or time.perf_counter() - started < min_time_s
        ):
            if training:
                w.zero_grads()
            t0 = time.perf_counter()
            step(w, training, seed)
            _sync(w.device)
            samples.append((time.perf_counter() - t0) * 1e3)
        clock = "perf_counter"
    # The median is the default; `min` suits CPUs shared with other tenants (a VM), where a
    # process's median swings with the neighbours' load but its fastest calls do not.
    value = min(samples) if stat == "min" else statistics.median(samples)
    return {
        METRIC_KEY: value,
        "stat": stat,
        "median": statistics.median(samples),
        "unit": "ms",
        "samples": len(samples),
        "min": min(samples),
        "max": max(samples),
        "clock": clock,
        "warmup": warmup,
        "l2_flush_bytes": int(flush.numel() * 4) if flush is not None else 0,
    }


# ---------------------------------------------------------------------------- audit


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
    from torch.profiler import ProfilerActivity, profile

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
        result["peak_source"] = "torch.cuda.memory_stats allocated_bytes.all.peak"
    else:
        reset = _vmhwm_reset()
        step(w, training, seed)
        peak = _vmhwm_bytes()
        result["peak_bytes"] = peak if reset else None
        result["peak_source"] = "VmHWM after clear_refs" if reset else ""
        if not reset:
            result["notes"].append("could not reset VmHWM (/proc/self/clear_refs): no peak")
    # Then operators and kernels under the profiler.
    activities = [ProfilerActivity.CPU]
    if w.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    w.zero_grads() if training else None
    with profile(activities=activities, profile_memory=w.device.type != "cuda") as prof:
        step(w, training, seed)
        _sync(w.device)
    events = prof.events()
    computing, every = _top_level_ops(events)
    result["operator_count"] = len(computing)
    result["operators_with_views"] = len(every)
    top = [dict(d, kind="op") for d in _counts(computing)[:12]]
    if w.device.type == "cuda":
        kernels: list[str] = []
        copies: list[str] = []
        for e in events:
            dt = getattr(e, "device_type", None)
            if dt is None or not str(dt).endswith("CUDA"):
                continue
            # Kineto's activity type tells kernels from copies and from the device-side
            # mirrors of record_function ranges ("gpu_user_annotation"), which are no launch.
            activity = str(getattr(e, "activity_type", "") or "")
            low = e.name.lower()
            if activity in ("gpu_memcpy", "gpu_memset") or (
                not activity and low.startswith(("memcpy", "memset"))
            ):
                copies.append(e.name)
            elif activity in ("kernel", "concurrent_kernel", ""):
                kernels.append(e.name)
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
            allocs = [
                k
                for k in prof.profiler.kineto_results.events()  # type: ignore[union-attr,unused-ignore]
                if k.name() == "[memory]" and k.nbytes() > 0
            ]
            result["allocation_count"] = len(allocs)
        except Exception:
            result["allocation_count"] = None
            result["notes"].append("allocation count not available from this torch")
    result["top_ops"] = top
    return result


# ---------------------------------------------------------------------------- outputs


def capture(job: dict[str, Any], device: torch.device, dtype: torch.dtype | None) -> dict:
    trials = []
    source = ""
    training = bool(job.get("training"))
    for i in range(int(job.get("trials", 5))):
        seed = int(job.get("seed", 0)) + i
        w = load_workload(job["kind"], job["spec"], job["root"], device, dtype, seed, training)
        source = w.source
        outs = step(w, training, seed)
        _sync(device)
        named = {k: v.detach().to("cpu").clone() for k, v in outs.items()}
        if training:
            for name, leaf in w.grad_leaves().items():
                g = leaf.grad
                named[f"grad:{name}"] = (
                    g.detach().to("cpu").clone() if g is not None else torch.tensor(float("nan"))
                )
        trials.append({"seed": seed, "outputs": named})
    return {"source": source, "trials": trials}


def _finfo_tiny(dtype: torch.dtype) -> float:
    try:
        return float(torch.finfo(dtype).tiny)
    except TypeError:
        return 0.0


def _precision_rank(dtype: torch.dtype) -> float:
    """Smaller is coarser: the dtype's machine epsilon inverted (integers are exact)."""
    try:
        return 1.0 / float(torch.finfo(dtype).eps)
    except TypeError:
        return math.inf


def tolerance(ref: torch.dtype, new: torch.dtype, exact: bool) -> tuple[float, float]:
    if exact:
        return 0.0, 0.0
    coarse = ref if _precision_rank(ref) <= _precision_rank(new) else new
    return _TOLERANCES.get(str(coarse).removeprefix("torch."), (0.0, 0.0))


_INT_OF = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}


def _ordered_ints(x: torch.Tensor) -> torch.Tensor:
    """Floats mapped to integers that count representable values (monotonic in x)."""
    bits = x.element_size() * 8
    i = x.contiguous().view(_INT_OF[bits]).to(torch.int64)
    if bits == 64:
        top = torch.iinfo(torch.int64).min
        return torch.where(i < 0, top - i, i)
    return torch.where(i < 0, -(i & ((1 << (bits - 1)) - 1)), i)


def _ulps(a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """ULP distance between finite a and b, both expressed in `dtype` (float64 result)."""
    if not dtype.is_floating_point or dtype.is_complex:
        return (a.to(torch.float64) - b.to(torch.float64)).abs()
    oa, ob = _ordered_ints(a.to(dtype)), _ordered_ints(b.to(dtype))
    if dtype.itemsize < 8:
        return (oa - ob).abs().to(torch.float64)
    same = (oa >= 0) == (ob >= 0)
    exact = (oa - ob).abs().to(torch.float64)  # cannot overflow when the signs agree
    rough = (oa.to(torch.float64) - ob.to(torch.float64)).abs()
    return torch.where(same, exact, rough)


def _bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.is_floating_point and a.element_size() * 8 in _INT_OF:
        width = _INT_OF[a.element_size() * 8]
        return bool(torch.equal(a.contiguous().view(width), b.contiguous().view(width)))
    return bool(torch.equal(a, b))


def _quantile(sorted_values: torch.Tensor, q: float) -> float:
    n = sorted_values.numel()
    if n == 0:
        return 0.0
    k = min(n - 1, max(0, math.ceil(q * n) - 1))
    return float(sorted_values[k])


def compare_one(
    name: str, refs: list[torch.Tensor], news: list[torch.Tensor], seeds: list[int], exact: bool
) -> dict[str, Any]:
    """Error statistics of one output over all trials (see docs/torch_workloads.md)."""
    r0, n0 = refs[0], news[0]
    s: dict[str, Any] = {
        "output": name,
        "ref_shape": list(r0.shape),
        "new_shape": list(n0.shape),
        "ref_dtype": str(r0.dtype).removeprefix("torch."),
        "new_dtype": str(n0.dtype).removeprefix("torch."),
        "shape_equal": all(r.shape == n.shape for r, n in zip(refs, news, strict=True)),
        "dtype_equal": all(r.dtype == n.dtype for r, n in zip(refs, news, strict=True)),
        "bit_identical": False,
        "mismatches": 0,
        "mismatch_share": 0.0,
        "nan_ref": 0,
        "nan_new": 0,
        "inf_ref": 0,
        "inf_new": 0,
        "nonfinite_positions_match": True,
        "signed_zero_diffs": 0,
        "worst_index": [],
    }
    if not s["shape_equal"]:
        numel = max(int(r0.numel()), int(n0.numel()), 1)
        s.update(mismatches=numel, mismatch_share=1.0, passed=False)
        return s
    rtol, atol = tolerance(r0.dtype, n0.dtype, exact)
    s["rtol"], s["atol"] = rtol, atol
    coarse = r0.dtype if _precision_rank(r0.dtype) <= _precision_rank(n0.dtype) else n0.dtype
    floor = max(atol, _finfo_tiny(coarse) if coarse.is_floating_point else 1.0)
    identical = True
    total = 0
    abs_sum = 0.0
    abs_n = 0
    max_abs: float | None = None
    max_rel: float | None = None
    ulps: list[torch.Tensor] = []
    worst_score = -math.inf
    worst: tuple[int, list[int], float, float] | None = None
    nonfinite_worst: tuple[int, list[int], float, float] | None = None
    for trial, (r, n) in enumerate(zip(refs, news, strict=True)):
        identical = identical and _bits_equal(r, n)
        total += r.numel()
        if r.is_complex() or n.is_complex():
            rd, nd = (
                torch.view_as_real(r.to(torch.complex128)),
                torch.view_as_real(n.to(torch.complex128)),
            )
        else:
            rd, nd = r.to(torch.float64), n.to(torch.float64)
        rnan, nnan = rd.isnan(), nd.isnan()
        rinf, ninf = rd.isinf(), nd.isinf()
        s["nan_ref"] += int(rnan.sum())
        s["nan_new"] += int(nnan.sum())
        s["inf_ref"] += int(rinf.sum())
        s["inf_new"] += int(ninf.sum())
        nonfinite_same = (
            (rnan == nnan) & (rd.isposinf() == nd.isposinf()) & (rd.isneginf() == nd.isneginf())
        )
        if not bool(nonfinite_same.all()):
            s["nonfinite_positions_match"] = False
        bad_nonfinite = ~nonfinite_same
        finite = rd.isfinite() & nd.isfinite()
        zero = (rd == 0) & (nd == 0) & finite
        s["signed_zero_diffs"] += int((zero & (rd.signbit() != nd.signbit())).sum())
        diff = (rd - nd).abs()
        diff = torch.where(finite, diff, torch.zeros_like(diff))
        allowed = atol + rtol * rd.abs()
        over = finite & (diff > allowed)
        if exact:
            over = over | (zero & (rd.signbit() != nd.signbit()))
        mism = over | bad_nonfinite
        s["mismatches"] += int(mism.sum())
        if bool(finite.any()):
            fd = diff[finite]
            abs_sum += float(fd.sum())
            abs_n += int(fd.numel())
            m = float(fd.max())
            max_abs = m if max_abs is None else max(max_abs, m)
            rel = (fd / rd.abs()[finite].clamp_min(floor)).max()
            max_rel = float(rel) if max_rel is None else max(max_rel, float(rel))
            if not (r.is_complex() or n.is_complex()):
                ulps.append(_ulps(r[finite], n[finite], coarse))
            # Worst = largest error measured against what the tolerance allows there.
            ratio = diff / allowed.clamp_min(1e-300) if (atol or rtol) else diff
            score = torch.where(finite, ratio, torch.full_like(diff, -math.inf))
            flat_idx = int(score.reshape(-1).argmax())
            best = float(score.reshape(-1)[flat_idx])
            if best > worst_score:
                worst_score = best
                idx = _unravel(flat_idx, list(rd.shape))
                worst = (
                    trial,
                    idx,
                    float(rd.reshape(-1)[flat_idx]),
                    float(nd.reshape(-1)[flat_idx]),
                )
        if nonfinite_worst is None and bool(bad_nonfinite.any()):
            flat_idx = int(bad_nonfinite.reshape(-1).nonzero()[0, 0])
            nonfinite_worst = (
                trial,
                _unravel(flat_idx, list(rd.shape)),
                float(rd.reshape(-1)[flat_idx]),
                float(nd.reshape(-1)[flat_idx]),
            )
    chosen = nonfinite_worst or worst
    if chosen is not None:
        s["worst_trial"], s["worst_index"], s["worst_ref"], s["worst_new"] = chosen
        s["worst_seed"] = seeds[chosen[0]] if chosen[0] < len(seeds) else None
    s["bit_identical"] = identical
    s["max_abs"] = max_abs
    s["mean_abs"] = abs_sum / abs_n if abs_n else None
    s["max_rel"] = max_rel
    if ulps:
        all_ulps = torch.cat([u.reshape(-1) for u in ulps]).sort().values
        s["ulp_max"] = float(all_ulps[-1]) if all_ulps.numel() else None
        s["ulp_p50"] = _quantile(all_ulps, 0.5)
        s["ulp_p99"] = _quantile(all_ulps, 0.99)
    s["mismatch_share"] = s["mismatches"] / total if total else 0.0
    s["passed"] = identical if exact else s["mismatches"] == 0
    for key in ("worst_ref", "worst_new", "max_abs", "max_rel", "mean_abs", "ulp_max"):
        v = s.get(key)
        if isinstance(v, float) and not math.isfinite(v):
            s[key] = None if math.isnan(v) else (1e308 if v > 0 else -1e308)
    return s


def _unravel(flat: int, shape: list[int]) -> list[int]:
    idx = []
    for dim in reversed(shape):
        idx.append(flat % dim if dim else 0)
        flat = flat // dim if dim else 0
    return list(reversed(idx))


def compare(ref: dict, new: dict, exact: bool) -> dict[str, Any]:
    ref_trials, new_trials = ref["trials"], new["trials"]
    seeds = [t["seed"] for t in ref_trials]
    problems: list[str] = []
    if [t["seed"] for t in new_trials] != seeds:
        problems.append("the two sides ran different seeds")
    ref_names = list(ref_trials[0]["outputs"]) if ref_trials else []
    new_names = list(new_trials[0]["outputs"]) if new_trials else []
    pairs = [(n, n) for n in ref_names if n in new_names]
    missing = [n for n in ref_names if n not in new_names]
    extra = [n for n in new_names if n not in ref_names]
    ref_grads = [n for n in missing if n.startswith("grad:param:")]
    new_grads = [n for n in extra if n.startswith("grad:param:")]
    if ref_grads and len(ref_grads) == len(new_grads):
        # A rewritten module may name its parameters differently: pair them in order.
        pairs += list(zip(ref_grads, new_grads, strict=True))
        missing = [n for n in missing if n not in ref_grads]
        extra = [n for n in extra if n not in new_grads]
    stats = []
    for rn, nn in pairs:
        refs = [t["outputs"][rn] for t in ref_trials]
        news = [t["outputs"][nn] for t in new_trials]
        st = compare_one(rn if rn == nn else f"{rn} ~ {nn}", refs, news, seeds, exact)
        stats.append(st)
    for n in missing:
        problems.append(f"output {n} missing on the variant side")
        stats.append(
            {
                "output": n,
                "shape_equal": False,
                "passed": False,
                "mismatches": 1,
                "mismatch_share": 1.0,
                "new_shape": [],
                "ref_shape": [],
            }
        )
    for n in extra:
        problems.append(f"output {n} only on the variant side")
    # An output only the variant has is reported, not failed: the reference says nothing on it.
    passed = bool(stats) and not missing and all(st.get("passed") for st in stats)
    if seeds != [t["seed"] for t in new_trials]:
        passed = False
    return {
        "passed": passed,
        "exact": exact,
        "seeds": seeds,
        "stats": stats,
        "problems": problems,
        "bit_identical": bool(stats) and all(s.get("bit_identical") for s in stats),
    }


# ---------------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="torch_worker.py", description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=("time", "audit", "outputs", "compare", "batch"))
    p.add_argument("--kind", choices=("torch", "kernelbench"), default="torch")
    p.add_argument("--spec", default="")
    p.add_argument("--root", default=".", help="the checkout to import from (default: cwd)")
    env = os.environ.get
    p.add_argument("--device", default=env("GPUOPT_TORCH_DEVICE", "auto"))
    p.add_argument("--dtype", default=env("GPUOPT_TORCH_DTYPE", "auto"))
    p.add_argument("--seed", type=int, default=int(env("GPUOPT_TORCH_SEED", "0")))
    p.add_argument("--training", action="store_true")
    p.add_argument("--warmup", type=int, default=int(env("GPUOPT_TORCH_WARMUP", "3")))
    p.add_argument("--min-samples", type=int, default=int(env("GPUOPT_TORCH_MIN_SAMPLES", "10")))
    p.add_argument("--max-samples", type=int, default=int(env("GPUOPT_TORCH_MAX_SAMPLES", "200")))
    p.add_argument("--min-time", type=float, default=float(env("GPUOPT_TORCH_MIN_TIME", "0.2")))
    p.add_argument(
        "--stat",
        choices=("median", "min"),
        default=env("GPUOPT_TORCH_STAT", "median"),
        help="time: the value one process reports (median of its calls, or the fastest)",
    )
    p.add_argument(
        "--no-l2-flush",
        dest="l2_flush",
        action="store_false",
        default=env("GPUOPT_TORCH_L2_FLUSH", "1") not in ("0", "no", "false"),
        help="time: do not flush the L2 before each call (GPU)",
    )
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--save", help="outputs: write the captured tensors here (torch.save)")
    p.add_argument("--compare-to", help="outputs: compare against this saved capture")
    p.add_argument("--new", help="compare: the variant's saved capture (--compare-to is the ref)")
    p.add_argument("--exact", action="store_true", help="require bit-identical outputs")
    p.add_argument("--jobs", help="batch: a JSON list of jobs (mode, kind, spec, training, …)")
    return p


def _clean(obj: Any) -> Any:
    """JSON has no NaN or Inf: non-finite floats become null (counts carry that news)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.flush()
    print(json.dumps(_clean(obj), allow_nan=False, default=str), flush=True)


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One unit of work (a mode on one workload); errors come back as "error", never raised."""
    mode = job["mode"]
    body: dict[str, Any] = {"mode": mode, "kind": job.get("kind", ""), "spec": job.get("spec", "")}
    try:
        exact = bool(job.get("exact"))
        if mode == "compare":
            if not (job.get("compare_to") and job.get("new")):
                raise WorkloadError("compare needs --compare-to REF and --new NEW")
            ref = torch.load(job["compare_to"], weights_only=True)
            new = torch.load(job["new"], weights_only=True)
            body.update(compare(ref, new, exact))
            return body
        device = _device(job.get("device"))
        dtype = _dtype(job.get("dtype"))
        training = bool(job.get("training"))
        seed = int(job.get("seed", 0))
        body["device"] = str(device)
        if device.type == "cuda":
            body["device_name"] = torch.cuda.get_device_name(device)
        if mode == "outputs":
            captured = capture(job, device, dtype)
            body["source"] = captured["source"]
            first = captured["trials"][0]["outputs"] if captured["trials"] else {}
            body["dtype"] = _dtype_label(dtype, list(first.values()))
            captured["meta"] = {k: v for k, v in body.items() if isinstance(v, (str, int))}
            if job.get("save"):
                save = os.path.abspath(job["save"])
                os.makedirs(os.path.dirname(save), exist_ok=True)
                torch.save(captured, save)
            body["outputs"] = {
                k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in first.items()
            }
            body["trials"] = len(captured["trials"])
            if job.get("compare_to"):
                ref = torch.load(job["compare_to"], weights_only=True)
                body.update(compare(ref, captured, exact))
            return body
        w = load_workload(job["kind"], job["spec"], job["root"], device, dtype, seed, training)
        body.update(source=w.source, seed=seed, training=training)
        body["dtype"] = _dtype_label(dtype, [t for t in w.inputs if isinstance(t, torch.Tensor)])
        if mode == "time":
            body.update(
                time_workload(
                    w,
                    training,
                    seed,
                    int(job.get("warmup", 3)),
                    int(job.get("min_samples", 10)),
                    int(job.get("max_samples", 200)),
                    float(job.get("min_time", 0.2)),
                    l2_flush=bool(job.get("l2_flush", True)),
                    stat=str(job.get("stat", "median")),
                )
            )
        elif mode == "audit":
            body.update(audit_workload(w, training, seed))
        else:
            raise WorkloadError(f"unknown mode {mode!r}")
    except Exception as exc:
        one = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
        body["error"] = one[:500]
        body["traceback"] = traceback.format_exc()[-4000:]
    return body


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    header: dict[str, Any] = {"gpuopt_worker": args.mode, "torch": str(torch.__version__)}
    if args.mode == "batch":
        try:
            jobs = json.loads(args.jobs or "[]")
            if not isinstance(jobs, list):
                raise ValueError("--jobs must be a JSON list")
        except ValueError as exc:
            _emit({**header, "error": f"bad --jobs: {exc}"})
            return 2
        results = []
        for job in jobs:
            job = dict(job)
            job.setdefault("root", args.root)
            job.setdefault("device", args.device)
            job.setdefault("dtype", args.dtype)
            results.append({"name": job.get("name", ""), **run_job(job)})
        _emit({**header, "results": results})
        return 0
    job = {k: v for k, v in vars(args).items() if v is not None}
    body = run_job(job)
    _emit({**header, **body})
    return 1 if "error" in body else 0


def _dtype_label(dtype: torch.dtype | None, tensors: list[torch.Tensor]) -> str:
    if dtype is not None:
        return str(dtype).removeprefix("torch.")
    for t in tensors:
        if t.is_floating_point():
            return str(t.dtype).removeprefix("torch.")
    return ""


if __name__ == "__main__":
    sys.exit(main())
