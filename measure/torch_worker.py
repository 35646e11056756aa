"""gpuopt's PyTorch worker: time, audit, profile or capture one workload, print one JSON line.

A self-contained script (standard library and torch only), run by path with the project's
own interpreter, so a GPU box's venv can run it without gpuopt installed there:

    python torch_worker.py time     --kind torch --spec pkg.mod:bench
    python torch_worker.py audit    --kind kernelbench --spec problems/softmax.py
    python torch_worker.py profile  --kind kernelbench --spec problems/softmax.py \
                                    [--trace out.trace.json] [--steps 3] [--no-probe]
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
import itertools
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


# ---------------------------------------------------------------------------- guards
# The clocks and synchronisation the worker times with, bound at import, before any
# workload is loaded: a candidate that replaces `time.perf_counter`, `torch.cuda.Event`'s
# methods or `torch.cuda.synchronize` changes nothing that is measured, and is found out.
_perf = time.perf_counter
_mono_ns = time.monotonic_ns
_cuda_sync = getattr(torch.cuda, "synchronize", None)
_Event: Any = getattr(torch.cuda, "Event", None)  # a CPU-only torch may lack it
_event_record: Any = getattr(_Event, "record", None)
_event_elapsed: Any = getattr(_Event, "elapsed_time", None)
_event_wait: Any = getattr(_Event, "synchronize", None)
_WATCHED_TIMERS = (
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.monotonic",
    "time.monotonic_ns",
    "time.time",
    "time.process_time",
    "torch.cuda.synchronize",
    "torch.cuda.Event",
    "torch.cuda.Event.record",
    "torch.cuda.Event.elapsed_time",
    "torch.cuda.Event.synchronize",
    "torch.cuda.Stream.synchronize",
)


def _attr_path(path: str) -> Any:
    obj: Any = {"time": time, "torch": torch}[path.split(".")[0]]
    for part in path.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


_TIMERS = {name: _attr_path(name) for name in _WATCHED_TIMERS}


def patched_timers() -> list[str]:
    """The clocks and synchronisation calls a workload replaced since the worker started."""
    return [n for n, real in _TIMERS.items() if real is not None and _attr_path(n) is not real]


def refuse_patched_timers() -> None:
    found = patched_timers()
    if found:
        raise WorkloadError(
            f"the workload replaced {', '.join(found)} (a patched timer): its figures cannot be "
            "trusted, so the timing and the check are refused"
        )


def restore_timers() -> None:
    """Put back what a workload replaced: the next job of a batch is timed with real clocks."""
    for name, real in _TIMERS.items():
        if real is None:
            continue
        parent_path, attr = name.rsplit(".", 1)
        parent = _attr_path(parent_path)
        if parent is not None and getattr(parent, attr, None) is not real:
            setattr(parent, attr, real)


# The Python threads alive when the current job began (set by run_job): a thread the
# workload started since, still running, works outside whatever measures or checks it.
_JOB_THREADS: set[int | None] = set()


def _threads() -> set[int | None]:
    import threading

    return {t.ident for t in threading.enumerate() if t.is_alive()}


def refuse_new_threads(before: set[int | None], what: str) -> None:
    """A Python thread started during a call and still running when it returned: its work
    falls outside whatever measured or checked the call."""
    import threading

    alive = [t.name for t in threading.enumerate() if t.is_alive() and t.ident not in before]
    if alive:
        raise WorkloadError(
            f"a thread the workload started during {what} ({', '.join(alive[:3])}) was still "
            "running when the call returned (a side thread): its work falls outside the timer "
            "and the check"
        )


_JOB_THREADS.update(_threads())  # until run_job sets it: the threads at import


POISON = 0xFF  # all-ones bytes: NaN in every floating format, -1 in the integer ones


def poison_freed(nbytes: list[int], device: torch.device) -> None:
    """Fill memory just freed with NaN: blocks of the freed sizes are taken (the caching
    allocator on a GPU, glibc's bins on a CPU, hand the same blocks back), filled and freed,
    so an output that reuses a freed buffer instead of writing it shows the poison."""
    for n in nbytes:
        if n > 0:
            block = torch.empty(int(n), dtype=torch.uint8, device=device)
            block.fill_(POISON)
            del block


def poison_count(t: torch.Tensor) -> int:
    """Elements of `t` whose bits are all ones: the poison of freed memory, unwritten."""
    width = _INT_OF.get(t.element_size() * 8) if t.dtype.is_floating_point else None
    if width is None or t.numel() == 0:
        return 0
    flat = t.detach().contiguous().reshape(-1)
    return sum(
        int((flat[lo : lo + CHUNK].view(width) == -1).sum()) for lo in range(0, flat.numel(), CHUNK)
    )


def _storage_nbytes(outs: dict[str, torch.Tensor]) -> list[int]:
    sizes = []
    for t in outs.values():
        try:
            sizes.append(int(t.untyped_storage().nbytes()))
        except Exception:
            continue
    return sizes


def is_plain_tensor(t: Any) -> bool:
    """A tensor and nothing else: a subclass can defer or fake what a comparison reads."""
    return type(t) is torch.Tensor or type(t) is torch.nn.Parameter


def output_meta(outs: dict[str, Any], inputs: list[Any]) -> dict[str, dict[str, Any]]:
    """What must match the reference besides the values: type, dtype, shape, strides,
    device, and whether the output lives in an input's memory (aliasing)."""
    spans = []
    for i, x in enumerate(inputs):
        if is_plain_tensor(x) and x.numel():
            st = x.untyped_storage()
            spans.append((i, st.data_ptr(), st.data_ptr() + st.nbytes()))
    meta: dict[str, dict[str, Any]] = {}
    for name, t in outs.items():
        if not is_plain_tensor(t):
            meta[name] = {"type": f"{type(t).__module__}.{type(t).__qualname__}", "plain": False}
            continue
        alias = None
        if t.numel():
            lo = t.untyped_storage().data_ptr()
            hi = lo + t.untyped_storage().nbytes()
            alias = next((i for i, a, b in spans if lo < b and a < hi), None)
        meta[name] = {
            "type": "torch.Tensor",
            "plain": True,
            "dtype": str(t.dtype).removeprefix("torch."),
            "shape": list(t.shape),
            "stride": [s for s, n in zip(t.stride(), t.shape, strict=True) if n > 1],
            "device": t.device.type,
            "aliases_input": alias,
        }
    return meta


def meta_problems(
    name: str, ref: dict[str, Any], new: dict[str, Any], precision: bool
) -> list[str]:
    """What differs between the reference's output and the variant's, besides values; a
    dtype change is one unless the contract declared a tolerance (`precision`)."""
    if not new.get("plain", True):
        return [f"{name}: the output is a {new.get('type')} (a tensor subclass or lazy object), "
                "not a tensor: refused"]  # fmt: skip
    out = []
    for key, words in (("device", "device"), ("shape", "shape"), ("stride", "strides")):
        if key in ref and key in new and ref[key] != new[key]:
            out.append(f"{name}: {words} {new[key]}, the reference's is {ref[key]}")
    if not precision and ref.get("dtype") and new.get("dtype") and ref["dtype"] != new["dtype"]:
        out.append(
            f"{name}: dtype {new['dtype']}, the reference's is {ref['dtype']} (a precision "
            "change needs a tolerance declared in the contract)"
        )
    if new.get("aliases_input") is not None and ref.get("aliases_input") is None:
        out.append(
            f"{name}: the output is a view of input {new['aliases_input']} (it aliases the "
            "input's memory), the reference's is not"
        )
    return out


def _fresh_host_rng() -> None:
    """Python's `random` and numpy's global state from fresh entropy, after a workload was
    built: a candidate that draws from them sees a new stream in every process and trial,
    never the same reset on every call (which would make a flaky candidate repeatable)."""
    import random

    random.seed(os.urandom(16))
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            numpy.random.seed(int.from_bytes(os.urandom(4), "little"))
        except Exception:
            pass


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
        self.warnings: list[str] = []  # what the check should tell a reader about this side
        self.layout: list[list[Any]] = []  # [name, shape] of the re-initialised tensors
        self.reinit_count = 0
        self.module: Any = None  # the nn.Module whose parameters and buffers are re-initialised
        # Inputs from a seed (the reference's get_inputs on this device), for fresh inputs per
        # call; None for a torch:MODULE:CALLABLE workload, whose factory gives one set.
        self.make_inputs: Any = None
        self.problem_file = ""  # the file whose code is the candidate's (kernelbench)
        self.reference_codes: set[Any] = set()  # code of this file's Model, when ModelNew runs
        self.candidate = False  # a KernelBench file's ModelNew
        self.last_meta: dict[str, dict[str, Any]] = {}  # output_meta of the last checked call

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
    inputs_from: str | None = None,
    reinit: bool = False,
) -> Workload:
    """Load a workload; `inputs_from` (a KernelBench file, the reference's) supplies
    get_inputs/get_init_inputs, and `reinit` re-initialises parameters and buffers at random."""
    _import_root(root)
    if kind == "torch":
        w = _load_callable(spec, device, dtype, seed, training)
        params = [(n, p, False) for n, p in w.params.items() if isinstance(p, torch.Tensor)]
        if reinit and isinstance(w.module, torch.nn.Module):
            named: list[tuple[str, torch.Tensor, bool]] = [
                (n, p, False) for n, p in w.module.named_parameters()
            ]
            named += [(n, b, True) for n, b in w.module.named_buffers()]
            w.reinit_count = reinit_(named, seed)
            w.layout = [[n, list(t.shape)] for n, t, _ in named]
        elif params:
            w.layout = [[n, list(t.shape)] for n, t, _ in params]
        return w
    if kind == "kernelbench":
        return _load_kernelbench(spec, root, device, dtype, seed, training, inputs_from, reinit)
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
    _fresh_host_rng()
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
    w = Workload(
        made["fn"],
        inputs,
        dict(made.get("kwargs") or {}),
        params,
        list(names) if names else None,
        device,
        dtype,
        spec,
    )
    w.module = params_raw if isinstance(params_raw, torch.nn.Module) else None
    return w


def _load_kernelbench(
    spec: str,
    root: str,
    device: torch.device,
    dtype: torch.dtype | None,
    seed: int,
    training: bool,
    inputs_from: str | None = None,
    reinit: bool = False,
) -> Workload:
    path = spec if os.path.isabs(spec) else os.path.join(root, spec)
    if not os.path.isfile(path):
        raise WorkloadError(f"no problem file {spec} in {root}")
    module = _exec_file(path, "gpuopt_problem_", spec)
    cls = getattr(module, "ModelNew", None) or getattr(module, "Model", None)
    source = module
    warnings: list[str] = []
    if inputs_from and os.path.isfile(inputs_from):
        # KernelBench's own rule: the reference's inputs drive both sides, so a candidate
        # cannot pass by changing what it is given.
        source = _exec_file(inputs_from, "gpuopt_reference_", inputs_from)
        for name in ("get_inputs", "get_init_inputs"):
            mine, theirs = getattr(module, name, None), getattr(source, name, None)
            if callable(mine) and callable(theirs) and _code_of(mine) != _code_of(theirs):
                warnings.append(
                    f"the variant's file redefines {name}(); the reference's is used on both sides"
                )
    for name in ("get_inputs", "get_init_inputs"):
        if not callable(getattr(source, name, None)):
            raise WorkloadError(f"{spec} has no {name}()")
    if cls is None:
        raise WorkloadError(f"{spec} defines neither ModelNew nor Model")
    _seed_all(seed)
    init = list(source.get_init_inputs())
    _seed_all(seed)
    model = cls(*init)
    model = model.to(device=device)
    if dtype is not None:
        model = model.to(dtype=dtype)
    named: list[tuple[str, torch.Tensor, bool]] = [
        (n, p, False) for n, p in model.named_parameters()
    ]
    named += [(n, b, True) for n, b in model.named_buffers()]
    reinit_count = reinit_(named, seed) if reinit else 0
    model.train(training)
    if not training:
        model.requires_grad_(False)

    def make_inputs(k: int, on_device: bool = False) -> list[Any]:
        _seed_all(k)
        if on_device and device.type != "cpu":
            with torch.device(device):  # made where they are used: no host-to-device copy
                made = _to(list(source.get_inputs()), device, dtype)
        else:
            made = _to(list(source.get_inputs()), device, dtype)
        _fresh_host_rng()
        if training:
            made = [
                x.detach().requires_grad_(True)
                if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())
                else x
                for x in made
            ]
        return made

    inputs = make_inputs(seed)
    params: dict[str, torch.Tensor] = dict(model.named_parameters()) if training else {}
    used = "ModelNew" if getattr(module, "ModelNew", None) is not None else "Model"
    w = Workload(model, inputs, {}, params, None, device, dtype, f"{spec}:{used}")
    w.warnings, w.module, w.reinit_count = warnings, model, reinit_count
    w.layout = [[n, list(t.shape)] for n, t, _ in named]
    w.make_inputs, w.problem_file = make_inputs, os.path.abspath(path)
    w.candidate = used == "ModelNew"
    if w.candidate:
        for mod in {id(module): module, id(source): source}.values():
            ref_cls = getattr(mod, "Model", None)
            if isinstance(ref_cls, type):
                w.reference_codes |= {
                    f.__code__ for f in vars(ref_cls).values() if hasattr(f, "__code__")
                }
    return w


def load_reference(
    inputs_from: str,
    root: str,
    device: torch.device,
    dtype: torch.dtype | None,
    seed: int,
    training: bool,
    reinit: bool,
) -> Workload:
    """The reference, in the candidate's process: what the baseline's file runs, built with
    the same seed (and re-initialised alike), for the re-check of timed calls."""
    return _load_kernelbench(inputs_from, root, device, dtype, seed, training, None, reinit)


def _exec_file(path: str, prefix: str, label: str) -> Any:
    mod_name = prefix + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    module_spec = importlib.util.spec_from_file_location(mod_name, path)
    if module_spec is None or module_spec.loader is None:
        raise WorkloadError(f"cannot load {label}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[mod_name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        raise WorkloadError(f"cannot import {label}: {type(exc).__name__}: {exc}") from exc
    return module


def _code_of(fn: Any) -> Any:
    try:
        return inspect.getsource(fn).strip()
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        return (code.co_code, code.co_consts) if code is not None else repr(fn)


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
    else:  # a lazy or deferred object would be read after the timer stopped
        raise WorkloadError(
            f"the output {prefix} is a {type(value).__qualname__}, not a tensor (a lazy or "
            "deferred result): refused"
        )


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
    """Wait for the whole device (every stream), with the synchronize bound at import."""
    if device.type == "cuda" and _cuda_sync is not None:
        _cuda_sync(device)


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


METRIC_LABELS = {
    "median": "time per call (ms), median of the calls after warm-up",
    "min": "time per call (ms), fastest call after warm-up",
}
# Environment variables that change what a timed call does; recorded with every run.
_RECORDED_ENV = ("GPUOPT_TORCH_", "GPUOPT_PRELOAD", "MALLOC_", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
STEADY_CALLS = 5  # warm-up is steady when this many calls in a row agree


def _faults() -> tuple[int, int]:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return int(r.ru_minflt), int(r.ru_majflt)


def _status_bytes(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _memory() -> dict[str, Any]:
    """This process's resident memory now and at its peak, and its RSS right after import."""
    return {
        "rss_bytes": _status_bytes("VmRSS"),
        "peak_rss_bytes": _status_bytes("VmHWM"),
        "rss_after_import_bytes": _RSS_AT_IMPORT,
    }


_RSS_AT_IMPORT = _status_bytes("VmRSS")


def _options(job: dict[str, Any]) -> dict[str, Any]:
    """Every setting in force for a timed replicate, wherever it was set (flag or env)."""
    stat = str(job.get("stat", "median"))
    return {
        "metric": METRIC_LABELS.get(stat, stat),
        "stat": stat,
        "warmup_min_calls": int(job.get("warmup", 3)),
        "warmup_max_calls": int(job.get("warmup_max", 50)),
        "warmup_tol": float(job.get("warmup_tol", 0.05)),
        "warmup_max_s": float(job.get("warmup_max_s", 5.0)),
        "min_samples": int(job.get("min_samples", 10)),
        "max_samples": int(job.get("max_samples", 200)),
        "min_time_s": float(job.get("min_time", 0.2)),
        "l2_flush": bool(job.get("l2_flush", True)),
        "threads": torch.get_num_threads(),
        "env": {
            k: v
            for k, v in sorted(os.environ.items())
            if k.startswith(_RECORDED_ENV) and not k.startswith("GPUOPT_TORCH_DEVICE_")
        },
    }


class InputFeed:
    """Fresh inputs for every call: a new set from the reference's get_inputs() with a seed
    derived from the trial's, made outside the timer, so no call sees an object, a pointer
    or a content it saw before (a cache keyed on any of them never hits). A set whose memory
    lands where an earlier one was is made again while the first is held."""

    def __init__(self, w: Workload, seed: int):
        self.w, self.seed, self.k = w, seed, 0
        self.seen: set[int] = set()
        self.repeats_avoided = 0
        self.made_ms = 0.0

    @property
    def fresh(self) -> bool:
        return self.w.make_inputs is not None

    def next(self) -> None:
        if self.w.make_inputs is None:
            return  # a factory's one set: said in the options
        self.w.inputs = []  # the last set is freed first: its memory is what must not repeat
        held: list[Any] = []
        t0 = _perf()
        ptrs: set[int] = set()
        for _ in range(4):
            self.k += 1
            made = self.w.make_inputs((self.seed * 1_000_003 + 7_777 * self.k) % 2**62, True)
            ptrs = {x.data_ptr() for x in made if isinstance(x, torch.Tensor) and x.numel()}
            if not ptrs & self.seen:
                break
            held.append(made)
            self.repeats_avoided += 1
        self.seen |= ptrs
        self.w.inputs = made
        del held
        self.made_ms += (_perf() - t0) * 1e3


class CallTimer:
    """One call timed: on a GPU between CUDA events with the whole device synchronized
    before the end event (work on side streams counts), after an L2 flush; on a CPU by
    perf_counter. Each call's wall window by a second clock, for the cross-check."""

    def __init__(self, device: torch.device, flush: torch.Tensor | None):
        self.device, self.flush = device, flush
        self.cuda = device.type == "cuda" and _Event is not None

    def __call__(self, fn: Any) -> tuple[float, float, Any]:
        if self.flush is not None:
            self.flush.zero_()  # evict the L2 so each call starts cold, as in a real step
        _sync(self.device)
        w0 = _mono_ns()
        if self.cuda:
            start, end = _Event(enable_timing=True), _Event(enable_timing=True)
            _event_record(start)
            out = fn()
            _sync(self.device)
            _event_record(end)
            _event_wait(end)
            ms = float(_event_elapsed(start, end))
        else:
            t0 = _perf()
            out = fn()
            ms = (_perf() - t0) * 1e3
        return ms, (_mono_ns() - w0) / 1e6, out


FLAKY_SHARE, CATCH = 0.25, 0.99  # a candidate wrong on 25% of calls is caught with 99%
# 1 - 0.75^n >= 0.99  =>  n >= log(0.01) / log(0.75) = 16.01: 17 calls
RECHECK_CALLS = math.ceil(math.log(1 - CATCH) / math.log(1 - FLAKY_SHARE))
RECHECK_SAMPLES = 3  # timed calls re-checked in each timing process (a round has many)


def _detached(outs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: _to_cpu(v) for k, v in outs.items() if is_plain_tensor(v)}


def stream_digest(values: list[Any]) -> str:
    """A position-weighted checksum of the tensors' bytes, a chunk at a time on their device
    (no copy of a whole input, and far cheaper than a hash: it runs twice per re-checked
    call). Any write into an input changes it."""
    parts: list[str] = []
    for x in values:
        if not isinstance(x, torch.Tensor):
            parts.append(repr(x))
            continue
        flat = x.detach().contiguous().reshape(-1).view(torch.uint8)
        total, weighted = 0, 0
        step_ = CHUNK * 4
        for lo in range(0, flat.numel(), step_):
            part = flat[lo : lo + step_].to(torch.int64)
            weights = torch.arange(lo, lo + part.numel(), device=part.device) % 65_521 + 1
            total += int(part.sum())
            weighted += int((part * weights).sum())
        parts.append(f"{tuple(x.shape)}{x.dtype}:{total}:{weighted}")
    return "|".join(parts)


class Parked:
    """Outputs moved to a file and read back memory-mapped: the re-check holds at most one
    side's outputs in memory while the other side runs (the comparison's memory bound)."""

    def __init__(self, outs: dict[str, torch.Tensor], folder: str):
        import tempfile

        fd, self.path = tempfile.mkstemp(suffix=".pt", prefix="gpuopt-recheck-", dir=folder)
        os.close(fd)
        torch.save({k: _own(_to_cpu(v) if v.device.type != "cpu" else v.detach())
                    for k, v in outs.items()}, self.path)  # fmt: skip

    def load(self) -> dict[str, torch.Tensor]:
        return dict(torch.load(self.path, mmap=True, weights_only=True))

    def close(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass


class Recheck:
    """Timed calls checked against the reference on the same inputs, in the same process,
    in both orders (reference first, candidate first) with the freed memory poisoned in
    between: an output that reuses the reference's freed buffer shows NaN. The side that
    ran first waits in a file, so memory holds the inputs and one side's outputs."""

    def __init__(self, ref: Workload, tol: tuple[float, float] | None, what: str, folder: str):
        self.ref, self.tol, self.what, self.folder = ref, tol, what, folder
        self.calls = 0
        self.failures: list[str] = []
        self.worst: dict[str, Any] = {}
        self._ref_parked: Parked | None = None
        self._ref_meta: dict[str, dict[str, Any]] = {}
        self._digest = ""
        self.reference_writes_inputs = False
        self._reference_watched = False

    def _reference(self, inputs: list[Any]) -> dict[str, torch.Tensor]:
        watch = not self._reference_watched  # the first time: does it write its inputs?
        before = stream_digest(inputs) if watch else ""
        self.ref.inputs = inputs
        outs = step(self.ref, False, 0)
        _sync(self.ref.device)
        self.ref.inputs = []
        self._ref_meta = output_meta(outs, inputs)
        if watch:
            self._reference_watched = True
            if stream_digest(inputs) != before:  # then it cannot run first on shared inputs
                self.reference_writes_inputs = True
        return outs

    def before(self, i: int, inputs: list[Any], reference_first: bool) -> None:
        """Ahead of timed call i: the inputs' digest, and the reference first when asked."""
        self._ref_parked = None
        if reference_first and not self.reference_writes_inputs:
            outs = self._reference(inputs)
            sizes = _storage_nbytes(outs)
            self._ref_parked = Parked(outs, self.folder)
            outs.clear()
            del outs
            poison_freed(sizes, self.ref.device)
        self._digest = stream_digest(inputs)

    def after(self, i: int, inputs: list[Any], outs: dict[str, Any], order: str) -> None:
        """After timed call i (`outs` is emptied): the checks, and the reference now if it
        did not run first."""
        self.calls += 1
        if self._ref_parked is None:
            order = "candidate first"
        label = f"{self.what} call {i + 1} ({order})"
        meta = output_meta(outs, inputs)
        if stream_digest(inputs) != self._digest:
            self.failures.append(f"{label}: the candidate wrote into its inputs (in place)")
        parked: Parked | None = None
        try:
            if self._ref_parked is None:
                sizes = _storage_nbytes(outs)
                parked = Parked(outs, self.folder)
                outs.clear()
                poison_freed(sizes, self.ref.device)
                ref_out = _cpu_view(self._reference(inputs))
                new = parked.load()
            else:
                parked = self._ref_parked
                ref_out = parked.load()
                new = _cpu_view(outs)
                outs.clear()
            self._compare(label, ref_out, new, meta)
            del ref_out, new
        finally:
            if parked is not None:
                parked.close()
            self._ref_parked = None

    def _compare(
        self,
        label: str,
        ref_out: dict[str, torch.Tensor],
        new: dict[str, torch.Tensor],
        meta: dict[str, dict[str, Any]],
    ) -> None:
        for name, r in ref_out.items():
            if name not in meta or name not in new:
                self.failures.append(f"{label}: output {name} is missing")
                continue
            declared = self.tol is not None
            found = meta_problems(name, self._ref_meta.get(name, {}), meta[name], declared)
            if found:
                self.failures += [f"{label}: {x}" for x in found]
                continue
            n = new[name]
            acc = OutputStats(name, False, self.tol)
            acc.add(0, 0, r, n)
            st = acc.finish()
            if st.get("passed"):
                continue
            poisoned = poison_count(n) - poison_count(r)
            trick = (
                f"; {poisoned} element(s) hold the NaN poison of freed memory: the output "
                "reuses memory it never wrote (result reuse through freed memory)"
                if poisoned > 0
                else ""
            )
            self.failures.append(
                f"{label}: {name} differs from the reference: {st.get('mismatches')} "
                f"mismatches, max abs {_num(st.get('max_abs'))}, NaN "
                f"{st.get('nan_ref')}→{st.get('nan_new')}{trick}"
            )
            if not self.worst or (st.get("max_abs") or 0) > (self.worst.get("max_abs") or 0):
                self.worst = {"output": name, "max_abs": st.get("max_abs"), "at": label}


def _cpu_view(outs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The outputs on the CPU: themselves when they are there already, else a copy."""
    return {
        k: (v.detach() if v.device.type == "cpu" else _to_cpu(v))
        for k, v in outs.items()
        if is_plain_tensor(v)
    }


def _scratch() -> str:
    import tempfile

    return tempfile.gettempdir()


def _num(v: Any) -> str:
    return "n/a" if v is None else f"{float(v):.3g}"


def clock_problem(samples: list[float], walls: list[float], cuda: bool, elapsed_s: float) -> str:
    """The in-process figure against the process's own clocks: timed calls cannot add up to
    more than the time that passed, and on a CPU they are nearly all of it."""
    total, wall = sum(samples), sum(walls)
    if total > wall * 1.05 + 1.0 or total > elapsed_s * 1e3 * 1.05 + 20.0:
        return (
            f"the timed calls add up to {total:.4g} ms, more than the {wall:.4g} ms the "
            "process's own clock saw: the clock is not the real one"
        )
    if not cuda and wall > 5.0 and total < 0.5 * wall:
        return (
            f"the timed calls add up to {total:.4g} ms, under half the {wall:.4g} ms the "
            "process's own clock saw around them: the clock is not the real one"
        )
    return ""


def warm_up(
    w: Workload,
    training: bool,
    seed: int,
    min_calls: int,
    max_calls: int,
    tol: float,
    max_s: float,
    feed: InputFeed | None = None,
) -> dict[str, Any]:
    """Call until the per-call time is steady: the last STEADY_CALLS calls within `tol` of
    their median (at least `min_calls`, at most `max_calls` or `max_s` seconds). A first call
    that raises ends the replicate here, before anything is timed."""
    times: list[float] = []
    started = _perf()
    steady = False
    need = max(min_calls, STEADY_CALLS)
    timer = CallTimer(w.device, None)
    while True:
        if feed is not None:
            feed.next()
        ms, _wall, outs = timer(lambda: step(w, training, seed))
        del outs
        times.append(ms)
        if len(times) >= need:
            last = times[-STEADY_CALLS:]
            mid = statistics.median(last)
            if mid > 0 and (max(last) - min(last)) <= tol * mid:
                steady = True
                break
        if len(times) >= max(max_calls, min_calls) or _perf() - started >= max_s:
            break
    return {
        "warmup_calls": len(times),
        "steady": steady,
        "warmup_last_ms": [round(t, 6) for t in times[-STEADY_CALLS:]],
    }


def timed_loop(
    w: Workload,
    training: bool,
    seed: int,
    feed: InputFeed,
    timer: CallTimer,
    more: Any,
    recheck: Recheck | None = None,
    pick: set[int] | None = None,
) -> tuple[list[float], list[float]]:
    """Timed calls while `more(n)` says so, each on fresh inputs; the calls in `pick` are
    re-checked against the reference, alternately reference first and candidate first."""
    samples: list[float] = []
    walls: list[float] = []
    while more(len(samples)):
        i = len(samples)
        feed.next()
        if training:
            w.zero_grads()
        checked = recheck is not None and (pick is None or i in pick)
        first = i % 2 == 1
        if checked and recheck is not None:
            recheck.before(i, w.inputs, first)
        before = _threads()
        ms, wall, outs = timer(lambda: step(w, training, seed))
        refuse_new_threads(before, f"timed call {i + 1}")
        refuse_new_threads(_JOB_THREADS, "its construction or a call")
        if checked and recheck is not None:
            order = "reference first" if first else "candidate first"
            recheck.after(i, w.inputs, outs, order)  # empties outs
        del outs
        samples.append(ms)
        walls.append(wall)
    return samples, walls


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
    warmup_max: int = 50,
    warmup_tol: float = 0.05,
    warmup_max_s: float = 5.0,
    reference: Workload | None = None,
    tol: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """Milliseconds per call after a steady-state warm-up: CUDA events around each call after
    an L2 flush on a GPU, perf_counter on a CPU. Warm-up calls are not counted. Each call has
    fresh inputs; with a reference, RECHECK_SAMPLES timed calls are re-checked against it."""
    refuse_patched_timers()
    feed = InputFeed(w, seed)
    warm = warm_up(w, training, seed, warmup, warmup_max, warmup_tol, warmup_max_s, feed)
    flush = _l2_buffer(w.device) if l2_flush else None
    timer = CallTimer(w.device, flush)
    recheck = (
        Recheck(reference, tol, "timed-loop re-check:", _scratch())
        if reference is not None
        else None
    )
    import random

    pick = set(random.SystemRandom().sample(range(min_samples), min(RECHECK_SAMPLES, min_samples)))
    faults0 = _faults()
    started = _perf()
    elapsed0 = os.times().elapsed

    def more(n: int) -> bool:
        return n < max_samples and (n < min_samples or _perf() - started < min_time_s)

    samples, walls = timed_loop(w, training, seed, feed, timer, more, recheck, pick)
    elapsed = os.times().elapsed - elapsed0
    faults1 = _faults()
    refuse_patched_timers()
    clock = clock_problem(samples, walls, timer.cuda, elapsed)
    if clock:
        raise WorkloadError(clock)
    if recheck is not None and recheck.failures:
        raise WorkloadError(
            f"{recheck.failures[0]} ({len(recheck.failures)} problem(s) in {recheck.calls} "
            "re-checked timed calls)"
        )
    # The median is the default; `min` suits CPUs shared with other tenants (a VM), where a
    # process's median swings with the neighbours' load but its fastest calls do not.
    value = min(samples) if stat == "min" else statistics.median(samples)
    out: dict[str, Any] = {
        METRIC_KEY: value,
        "stat": stat,
        "metric": METRIC_LABELS.get(stat, stat),
        "median": statistics.median(samples),
        "unit": "ms",
        "samples": len(samples),
        "min": min(samples),
        "max": max(samples),
        "clock": "cuda_event" if timer.cuda else "perf_counter",
        "warmup": warmup,
        **warm,
        "l2_flush_bytes": int(flush.numel() * 4) if flush is not None else 0,
        # Page faults of the timed calls: a call that faults its memory in again each time
        # is timing the allocator (glibc gives large blocks back to the OS on free).
        "minor_faults_per_call": (faults1[0] - faults0[0]) / len(samples),
        "major_faults_per_call": (faults1[1] - faults0[1]) / len(samples),
        "minor_faults": faults1[0],
        "major_faults": faults1[1],
        "inputs": (
            "fresh per call from the reference's get_inputs()"
            if feed.fresh and reference is not None
            else "fresh per call from this file's get_inputs() (no reference given)"
            if feed.fresh
            else "the factory's one set, the same every call"
        ),
        "inputs_ms_per_call": round(feed.made_ms / max(1, feed.k), 4),
        "rechecked_calls": recheck.calls if recheck is not None else 0,
        "clock_check": "the timed calls agree with the process's own clock",
    }
    out.update(_memory())
    if not warm["steady"]:
        out["warning"] = (
            f"the per-call time did not settle in {warm['warmup_calls']} warm-up calls "
            f"(last: {', '.join(f'{t:.3g}' for t in warm['warmup_last_ms'])} ms)"
        )
    return out


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
                for k in prof.profiler.kineto_results.events()  # type: ignore[union-attr,unused-ignore]
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


# ---------------------------------------------------------------------------- profile

PROFILE_ROWS = 25  # rows kept of the operator and kernel tables
TENSOR_ROWS = 40  # rows kept of the intermediate-tensor table
SEQUENCE_MAX = 400  # top-level operators kept in call order
# Ops that move data without arithmetic: bytes, but no FLOPs.
_MOVING_OPS = frozenset(
    (
        "copy_", "clone", "_to_copy", "fill_", "zero_", "cat", "stack", "index", "index_select",
        "gather", "scatter", "scatter_", "repeat", "constant_pad_nd", "slice_scatter",
        "select_scatter", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
        "new_zeros", "new_ones", "new_full", "_unsafe_index", "index_put_", "masked_select",
    )
)  # fmt: skip
_NO_TRAFFIC_OPS = frozenset(("empty", "empty_like", "empty_strided", "new_empty", "set_"))


def _metas(value: Any) -> list[Any]:
    """The tensor metadata among a profiled op's inputs (lists of tensors flattened)."""
    if isinstance(value, (list, tuple)):
        return [m for v in value for m in _metas(v)]
    return [value] if hasattr(value, "allocation_id") and hasattr(value, "sizes") else []


def _kind(node: Any) -> str:
    name = type(node.extra_fields).__name__
    if name.endswith("TorchOp"):
        return "op"
    if name.endswith("Allocation"):
        return "alloc"
    return "other"


def _meta_bytes(meta: Any) -> int:
    numel = 1
    for s in meta.sizes:
        numel *= int(s)
    itemsize = getattr(meta.dtype, "itemsize", None)
    if not itemsize:
        itemsize = torch.empty((), dtype=meta.dtype).element_size()
    return numel * int(itemsize)


def _node_computes(node: Any) -> bool:
    """A view op does not compute; a maybe-view op does when something below it does."""
    name = node.name
    if name in _VIEW_OPS:
        return False
    if name not in _MAYBE_VIEW_OPS:
        return True
    for c in node.children:
        kind = _kind(c)
        if kind == "alloc" and c.extra_fields.alloc_size > 0:
            return True
        if kind == "op" and c.name.startswith("aten::") and _node_computes(c):
            return True
    return False


def _short_dtype(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


STEP_RANGE = "gpuopt::step"  # the record_function range around each profiled step


def _tree_tables(prof: Any, outputs: list[torch.Tensor]) -> dict[str, Any]:
    """Top-level operators in call order, and every tensor the last profiled step allocated:
    its bytes, shape, dtype, producing op, consuming ops and time alive (memory events)."""
    every = sorted(
        prof.profiler.kineto_results.experimental_event_tree(), key=lambda n: n.start_time_ns
    )
    steps = [n for n in every if n.name == STEP_RANGE]
    roots = steps[-1:] or every
    ops: list[dict[str, Any]] = []
    tensors: dict[int, dict[str, Any]] = {}
    moves: list[tuple[int, int, int]] = []  # (time ns, bytes, allocation id): the live-bytes walk

    def visit(node: Any, top: int | None) -> None:
        kind = _kind(node)
        if kind == "op" and top is None and node.name.startswith("aten::"):
            top = len(ops)
            ops.append(
                {
                    "name": node.name,
                    "start": node.start_time_ns,
                    "end": node.end_time_ns,
                    "inputs": _metas(list(node.extra_fields.inputs)),
                    "computes": _node_computes(node),
                }
            )
        elif kind == "alloc":
            ef = node.extra_fields
            size, aid = int(ef.alloc_size), int(ef.allocation_id)
            t = int(node.start_time_ns)
            if size > 0:
                tensors[aid] = {
                    "bytes": size,
                    "t0": t,
                    "t1": None,
                    "producer": top,
                    "ptr": int(ef.ptr),
                }
                moves.append((t, size, aid))
            elif aid in tensors and tensors[aid]["t1"] is None:
                tensors[aid]["t1"] = t
                moves.append((t, size, aid))
        for child in sorted(node.children, key=lambda n: n.start_time_ns):
            visit(child, top)

    for r in roots:
        visit(r, None)
    end_ns = max([o["end"] for o in ops] + [t for t, _, _ in moves] + [0])
    computing = [i for i, o in enumerate(ops) if o["computes"]]
    next_computing = {a: b for a, b in itertools.pairwise(computing)}
    for i in computing:
        op = ops[i]
        seen: set[int] = set()
        for meta in op["inputs"]:
            aid = meta.allocation_id
            rec = tensors.get(int(aid)) if aid is not None else None
            if rec is None or aid in seen:
                continue
            seen.add(aid)
            rec.setdefault("shape", list(meta.sizes))
            rec.setdefault("dtype", _short_dtype(meta.dtype))
            rec.setdefault("view_bytes", _meta_bytes(meta))
            rec.setdefault("readers", []).append(i)
            rec.setdefault("read_bytes", []).append(_meta_bytes(meta))
        # An in-place op (name ending in "_") writes its first input again.
        if op["name"].endswith("_") and not op["name"].endswith("__") and op["inputs"]:
            first = op["inputs"][0].allocation_id
            rec = tensors.get(int(first)) if first is not None else None
            if rec is not None and rec["producer"] != i:
                rec["rewritten"] = True
    by_ptr: dict[int, torch.Tensor] = {}
    for t in outputs:
        try:
            by_ptr.setdefault(int(t.untyped_storage().data_ptr()), t)
        except Exception:  # a tensor without storage (a subclass): no shape to lend
            pass
    rows: list[dict[str, Any]] = []
    for aid, rec in tensors.items():
        p = rec["producer"]
        if rec["t1"] is None and "shape" not in rec and rec["ptr"] in by_ptr:
            out = by_ptr[rec["ptr"]]
            rec.update(shape=list(out.shape), dtype=_short_dtype(out.dtype))
        t1 = rec["t1"]
        if t1 is None:
            kind = "output"  # still alive when the step ended: an output, or kept state
        elif p is not None and t1 <= ops[p]["end"]:
            kind = "temporary"  # scratch freed inside the op that made it
        else:
            kind = "intermediate"
        readers = rec.get("readers", [])
        rows.append(
            {
                "id": aid,
                "bytes": rec["bytes"],
                "shape": rec.get("shape"),
                "dtype": rec.get("dtype"),
                "producer": ops[p]["name"] if p is not None else "(outside an operator)",
                "producer_index": p,
                "consumers": [ops[c]["name"] for c in readers],
                "consumer_indices": readers,
                "alive_us": round(((t1 if t1 is not None else end_ns) - rec["t0"]) / 1e3, 3),
                "freed": t1 is not None,
                "kind": kind,
                "rewritten": bool(rec.get("rewritten")),
                "_t0": rec["t0"],
                "_t1": t1,
                "_read_bytes": rec.get("read_bytes", []),
            }
        )
    rows.sort(key=lambda r: (-r["bytes"], r["_t0"]))
    return {
        "ops": ops,
        "computing": computing,
        "next": next_computing,
        "rows": rows,
        "moves": moves,
    }


def _live_peak(rows: list[dict[str, Any]], moves: list[tuple[int, int, int]]) -> dict[str, Any]:
    """The peak of the bytes the step itself allocated, and the tensors alive at that peak."""
    live = top = 0
    at: int | None = None
    for t, size, _aid in sorted(moves, key=lambda m: (m[0], m[1] < 0)):
        live += size
        if live > top:
            top, at = live, t
    overlap = [
        r for r in rows if at is not None and r["_t0"] <= at and (r["_t1"] is None or r["_t1"] > at)
    ]
    return {
        "bytes": top,
        "tensors": [
            {k: r[k] for k in ("id", "bytes", "shape", "dtype", "producer", "kind")}
            for r in sorted(overlap, key=lambda r: -r["bytes"])[:10]
        ],
        "tensor_count": len(overlap),
    }


def _pairs(tables: dict[str, Any]) -> list[dict[str, Any]]:
    """Full-buffer write/read pairs: an intermediate written once by one op and read once, whole,
    by the next op. Fusing the pair saves writing it and reading it back: 2 x its bytes."""
    ops, nxt = tables["ops"], tables["next"]
    out = []
    for r in tables["rows"]:
        p, readers = r["producer_index"], r["consumer_indices"]
        if r["kind"] != "intermediate" or p is None or r["rewritten"] or len(readers) != 1:
            continue
        if nxt.get(p) != readers[0] or not ops[p]["computes"]:
            continue
        size = int(r["_read_bytes"][0]) if r["_read_bytes"] else r["bytes"]
        if size < r["bytes"] // 2:  # a slice of the buffer: not a full-buffer pair
            continue
        out.append(
            {
                "producer": r["producer"],
                "consumer": r["consumers"][0],
                "bytes": size,
                "saved_bytes": 2 * size,
                "shape": r["shape"],
                "dtype": r["dtype"],
                "tensor": r["id"],
            }
        )
    out.sort(key=lambda d: -d["bytes"])
    return out


def _shared(tables: dict[str, Any]) -> list[dict[str, Any]]:
    """Intermediates several ops read (an exp read by a sum and a div): no write/read pair,
    yet one fusion of the producer with all its readers saves the write and every read."""
    ops = tables["ops"]
    out = []
    for r in tables["rows"]:
        p, readers = r["producer_index"], r["consumer_indices"]
        if r["kind"] != "intermediate" or p is None or r["rewritten"] or len(readers) < 2:
            continue
        if not ops[p]["computes"]:
            continue
        reads = [int(b) for b in r["_read_bytes"]] or [r["bytes"]] * len(readers)
        out.append(
            {
                "producer": r["producer"],
                "consumers": r["consumers"],
                "bytes": r["bytes"],
                "saved_bytes": r["bytes"] + sum(reads),  # its write and each read of it
                "shape": r["shape"],
                "dtype": r["dtype"],
                "tensor": r["id"],
            }
        )
    out.sort(key=lambda d: -d["saved_bytes"])
    return out


def _frequent_boundary(bounds: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The most frequent boundary worth naming: one seen more than once with bytes across
    it (a boundary nothing crosses, or seen once, says nothing about fusion); None if none."""
    return next((b for b in bounds if b["bytes"] > 0 and b["count"] > 1), None)


def _boundaries(tables: dict[str, Any]) -> list[dict[str, Any]]:
    """Each pair of consecutive computing ops, how often it occurs, and the bytes that cross it."""
    ops, computing = tables["ops"], tables["computing"]
    crossing: dict[tuple[int, int], int] = {}
    for r in tables["rows"]:
        p = r["producer_index"]
        for c in r["consumer_indices"]:
            if p is not None and tables["next"].get(p) == c:
                crossing[(p, c)] = crossing.get((p, c), 0) + r["bytes"]
    tally: dict[tuple[str, str], list[int]] = {}
    for a, b in itertools.pairwise(computing):
        entry = tally.setdefault((ops[a]["name"], ops[b]["name"]), [0, 0])
        entry[0] += 1
        entry[1] += crossing.get((a, b), 0)
    found: list[dict[str, Any]] = [
        {"from": a, "to": b, "count": n, "bytes": nb} for (a, b), (n, nb) in tally.items()
    ]
    # Boundaries with bytes across them first: those are what a fusion would save.
    found.sort(key=lambda d: (d["bytes"] == 0, -d["count"], -d["bytes"], d["from"], d["to"]))
    return found


def _device_events(events: Any) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """(kernels, copies and sets) on the GPU, each as (name, microseconds), in order."""
    kernels: list[tuple[str, float]] = []
    copies: list[tuple[str, float]] = []
    for e in events:
        dt = getattr(e, "device_type", None)
        if dt is None or not str(dt).endswith("CUDA"):
            continue
        # Kineto's activity type tells kernels from copies and from the device-side
        # mirrors of record_function ranges ("gpu_user_annotation"), which are no launch.
        activity = str(getattr(e, "activity_type", "") or "")
        low = e.name.lower()
        us = float(
            getattr(e, "device_time_total", 0.0) or getattr(e, "self_device_time_total", 0.0) or 0.0
        )
        if activity in ("gpu_memcpy", "gpu_memset") or (
            not activity and low.startswith(("memcpy", "memset"))
        ):
            copies.append((e.name, us))
        elif activity in ("kernel", "concurrent_kernel", ""):
            kernels.append((e.name, us))
    return kernels, copies


def _per_step(count: int, steps: int) -> int | float:
    return count // steps if count % steps == 0 else round(count / steps, 3)


def _step_roots(prof: Any) -> list[Any]:
    every = sorted(
        prof.profiler.kineto_results.experimental_event_tree(), key=lambda n: n.start_time_ns
    )
    return [n for n in every if n.name == STEP_RANGE] or every


def _cpu_rows(prof: Any) -> list[dict[str, Any]]:
    """Per (aten op, input shapes): calls and self time in each profiled step, from the
    event tree; a row's time is its fastest step (a neighbour's load only ever adds time)."""
    per_step: list[dict[tuple[str, str], list[float]]] = []
    shapes_of: dict[tuple[str, str], list[Any]] = {}
    for root in _step_roots(prof):
        acc: dict[tuple[str, str], list[float]] = {}
        stack = [root]
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            if _kind(node) != "op" or not node.name.startswith("aten::"):
                continue
            inside = sum(c.end_time_ns - c.start_time_ns for c in node.children if _kind(c) == "op")
            own = (node.end_time_ns - node.start_time_ns - inside) / 1e3
            shapes = [list(m.sizes) for m in _metas(list(node.extra_fields.inputs))]
            key = (node.name, json.dumps(shapes))
            shapes_of[key] = shapes
            entry = acc.setdefault(key, [0, 0.0, 0.0])
            entry[0] += 1
            entry[1] += own
            entry[2] += (node.end_time_ns - node.start_time_ns) / 1e3
        per_step.append(acc)
    rows = []
    for key, shapes in shapes_of.items():
        seen = [step[key] for step in per_step if key in step]
        rows.append(
            {
                "name": key[0],
                "calls": int(seen[-1][0]),
                "self_us": round(min(x[1] for x in seen), 3),
                "self_cpu_us": round(min(x[1] for x in seen), 3),
                "total_us": round(min(x[2] for x in seen), 3),
                "input_shapes": shapes,
            }
        )
    return rows


def _gpu_rows(prof: Any, steps: int) -> list[dict[str, Any]]:
    rows = []
    for e in prof.key_averages(group_by_input_shape=True):
        if not e.key.startswith("aten::"):
            continue
        self_dev = float(getattr(e, "self_device_time_total", 0.0) or 0.0)
        rows.append(
            {
                "name": e.key,
                "calls": _per_step(int(e.count), steps),
                "self_us": round(self_dev / steps, 3),
                "self_cpu_us": round(float(e.self_cpu_time_total) / steps, 3),
                "total_us": round(float(e.cpu_time_total) / steps, 3),
                "input_shapes": [
                    list(x) if isinstance(x, (list, tuple)) else x for x in (e.input_shapes or [])
                ],
            }
        )
    return rows


def _op_tables(prof: Any, device: torch.device, steps: int) -> dict[str, Any]:
    """The operator table per step (name and input shapes, self time, calls, share of the
    total) and the same per op name: self device time on a GPU (the mean of the steps), self
    CPU time on a CPU (the fastest step of each row)."""
    gpu = device.type == "cuda"
    rows = _gpu_rows(prof, steps) if gpu else _cpu_rows(prof)
    total = sum(r["self_us"] for r in rows) or 0.0
    by_name: dict[str, dict[str, Any]] = {}
    for r in rows:
        r["share"] = round(r["self_us"] / total, 4) if total else None
        agg = by_name.setdefault(r["name"], {"name": r["name"], "calls": 0, "self_us": 0.0})
        agg["calls"] += r["calls"]
        agg["self_us"] += r["self_us"]
    names = sorted(by_name.values(), key=lambda d: (-d["self_us"], d["name"]))
    for d in names:
        d["self_us"] = round(d["self_us"], 3)
        d["share"] = round(d["self_us"] / total, 4) if total else None
    rows.sort(key=lambda r: (-r["self_us"], r["name"]))
    return {
        "operators": rows[:PROFILE_ROWS],
        "operator_rows": len(rows),
        "ops_by_name": names[:PROFILE_ROWS],
        "self_total_us": round(total, 3),
        "time_basis": "self device time" if gpu else "self CPU time",
    }


def _kernel_table(kernels: list[tuple[str, float]], steps: int) -> list[dict[str, Any]]:
    tally: dict[str, list[float]] = {}
    for name, us in kernels:
        entry = tally.setdefault(name, [0, 0.0])
        entry[0] += 1
        entry[1] += us
    total = sum(us for _, us in kernels) or 0.0
    rows: list[dict[str, Any]] = [
        {
            "name": n,
            "calls": _per_step(int(c), steps),
            "self_us": round(t / steps, 3),
            "share": round(t / total, 4) if total else None,
        }
        for n, (c, t) in tally.items()
    ]
    rows.sort(key=lambda r: (-r["self_us"], r["name"]))
    return rows[:PROFILE_ROWS]


def _numel(t: torch.Tensor) -> int:
    return int(t.numel())


def _tensor_list(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensor_list(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensor_list(v)]
    return []


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
        step(w, training, seed)
    _sync(w.device)
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
        "by_op": rows[:PROFILE_ROWS],
        "source": "torch.utils.flop_counter for matmul/convolution/attention; normalisations and "
        "softmax from their formulas (per element: softmax 5, layer norm 5 + 2 with its affine "
        "parameters, batch norm 4, rms norm 4); element counts for the rest; bytes: inputs "
        "and outputs of every op that is not a view, at the dispatcher",
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


def _first_float_dtype(inputs: list[Any]) -> torch.dtype | None:
    for t in inputs:
        if isinstance(t, torch.Tensor) and t.is_floating_point():
            return t.dtype
    return None


# ---------------------------------------------------------------------------- outputs

# Extra trials on the first seed's inputs, transformed: what randn inputs never show.
STRESS_KINDS = ("x100", "x1e-3", "zeros", "nan_inf")
CHUNK = 1 << 18  # elements compared at once: float64 temporaries of 2 MiB each
ULP_SAMPLE = 1 << 16  # ULP values kept per output and trial for the quantiles
_REINIT_SALT = 104729
_INJECT_SALT = 31337
INDEX = "index.json"


def stress_inputs(inputs: list[Any], kind: str, seed: int) -> list[Any]:
    """A stress trial's inputs: scaled ×100 or ×1e-3, zeros, or NaN, +Inf, -Inf injected."""
    out: list[Any] = []
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            out.append(x)
            continue
        with torch.no_grad():
            if kind == "x100":
                y = x * 100
            elif kind == "x1e-3":
                y = x * 1e-3
            elif kind == "zeros":
                y = torch.zeros_like(x)
            elif kind == "nan_inf":
                y = x.detach().clone().contiguous()
                flat = y.view(-1)
                # float8 formats without an Inf would turn it into NaN: leave them as they are
                if flat.numel() and x.element_size() > 1:
                    gen = torch.Generator().manual_seed(seed + _INJECT_SALT + i)
                    idx = torch.randperm(flat.numel(), generator=gen)[:3].to(flat.device)
                    special = torch.tensor([math.nan, math.inf, -math.inf], dtype=flat.dtype)
                    flat[idx] = special[: idx.numel()].to(flat.device)
            else:
                raise WorkloadError(f"unknown stress kind {kind!r}")
        out.append(y.detach().requires_grad_(x.requires_grad))
    return out


def reinit_(named: list[tuple[str, torch.Tensor, bool]], seed: int) -> int:
    """Random values in every floating parameter and buffer, chosen by position and seed, so
    both sides get the same ones: weights at their init values (1 and 0) prove nothing.

    Matrices get U(±1/√fan_in), vectors U(−1, 1), buffers U(0.5, 1.5) (a running variance
    stays positive). Returns how many tensors were set.
    """
    count = 0
    with torch.no_grad():
        for i, (_name, t, is_buffer) in enumerate(named):
            if not t.is_floating_point() or t.numel() == 0:
                continue
            gen = torch.Generator().manual_seed(seed * 1_000_003 + _REINIT_SALT + i)
            # float32 and in place: a parameter as large as an output costs one more, not four
            v = torch.rand(tuple(t.shape), generator=gen, dtype=torch.float32)
            if is_buffer:
                v.add_(0.5)
            elif t.dim() >= 2:
                v.mul_(2).sub_(1).div_(math.sqrt(max(1, t[0].numel())))
            else:
                v.mul_(2).sub_(1)
            t.copy_(v)
            del v
            count += 1
    return count


def _to_cpu(t: torch.Tensor) -> torch.Tensor:
    """A contiguous CPU copy (one copy, never a view: a later call may overwrite the storage)."""
    t = t.detach()
    out = torch.empty(tuple(t.shape), dtype=t.dtype, device="cpu")
    return out.copy_(t)


def capture_step(
    w: Workload, training: bool, seed: int, copy: bool = True
) -> tuple[dict[str, torch.Tensor], list[str]]:
    """One call's outputs (and gradients on a training path) on the CPU, and the names of the
    gradients that are None (a parameter or input the call did not use). With copy=False a
    CPU output is the call's own tensor: read it before the next call (the repeat check)."""
    keep = _to_cpu if copy else (lambda t: t.detach().to("cpu").contiguous())
    before = _threads()
    outs = step(w, training, seed)
    _sync(w.device)
    refuse_new_threads(before, "a checked call")
    refuse_new_threads(_JOB_THREADS, "its construction or a call")
    for name, v in outs.items():  # before anything reads it: a subclass could fake the read
        if not is_plain_tensor(v):
            raise WorkloadError(
                f"the output {name} is a {type(v).__qualname__} (a tensor subclass or lazy "
                "object), not a tensor: refused"
            )
    w.last_meta = output_meta(outs, w.inputs)
    named = {k: keep(v) for k, v in outs.items()}
    del outs
    none: list[str] = []
    if training:
        for name, leaf in w.grad_leaves().items():
            if leaf.grad is None:
                none.append(f"grad:{name}")
            else:
                named[f"grad:{name}"] = keep(leaf.grad)
    return named, none


def _trim() -> None:
    """Give the heap's free memory back to the OS between trials (glibc's malloc_trim): the
    chunk temporaries and mid-sized tensors of one trial would otherwise stay resident."""
    global _LIBC
    if _LIBC is None:
        try:
            import ctypes

            _LIBC = ctypes.CDLL("libc.so.6")
        except OSError:
            _LIBC = False
    if _LIBC:
        try:
            _LIBC.malloc_trim(0)
        except AttributeError:  # not glibc
            _LIBC = False


_LIBC: Any = None
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 1 << 20


def _fixed_mmap_threshold() -> None:
    """In a check's process (never a timed one): blocks of 1 MiB and more are mapped and
    unmapped by glibc, never kept in the heap. glibc otherwise raises its threshold after
    the first large free, and the comparison's 2 MiB chunk temporaries, interleaved with the
    small tensors it keeps, then fragment the heap by one chunk per chunk compared
    (measured: 1.7× one output more in the second trial of a 100 MB comparison)."""
    _trim()
    if _LIBC:
        try:
            _LIBC.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            _LIBC.mallopt(_M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD)
        except AttributeError:
            pass


def _repeat_diffs(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> dict[str, int]:
    """Per output, the elements two calls on the same input disagree on (bit for bit)."""
    out = {}
    for name, t in a.items():
        other = b.get(name)
        diff = t.numel() if other is None else bit_diffs(t, other)
        if diff:
            out[name] = diff
    return out


def _shares(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    """Some output of `b` lives in the storage of the same-named output of `a`."""
    for name, t in a.items():
        o = b.get(name)
        if o is not None and o.untyped_storage().data_ptr() == t.untyped_storage().data_ptr():
            return True
    return False


def _own(t: torch.Tensor) -> torch.Tensor:
    """`t` itself when it is contiguous and owns its whole storage, else a copy that does:
    torch.save writes whole storages, and a view of an input would save the input."""
    if t.is_contiguous() and t.untyped_storage().nbytes() == t.numel() * t.element_size():
        return t
    return _to_cpu(t)


def _flat_chunks(a: torch.Tensor, b: torch.Tensor) -> Any:
    fa, fb = a.reshape(-1), b.reshape(-1)
    for lo in range(0, fa.numel(), CHUNK):
        yield lo, fa[lo : lo + CHUNK], fb[lo : lo + CHUNK]


def bit_diffs(a: torch.Tensor, b: torch.Tensor) -> int:
    """How many elements differ bit for bit (every element when the shapes differ)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return max(a.numel(), b.numel(), 1)
    width = _INT_OF.get(a.element_size() * 8) if a.dtype.is_floating_point else None
    n = 0
    for _lo, x, y in _flat_chunks(a, b):
        if width is not None:
            n += int((x.contiguous().view(width) != y.contiguous().view(width)).sum())
        else:
            n += int((x != y).sum())
    return n


def _digest(inputs: list[Any]) -> str:
    import hashlib

    h = hashlib.sha256()
    for x in inputs:
        if isinstance(x, torch.Tensor):
            t = x.detach().to("cpu").contiguous()
            h.update(f"{tuple(t.shape)}{t.dtype}".encode())
            h.update(t.view(torch.uint8).reshape(-1).numpy().tobytes() if t.numel() else b"")
        else:
            h.update(repr(x).encode())
    return h.hexdigest()[:16]


def read_index(path: str) -> dict[str, Any]:
    with open(os.path.join(path, INDEX)) as f:
        return dict(json.load(f))


def load_trial(path: str, entry: dict[str, Any]) -> dict[str, torch.Tensor]:
    """One trial's saved tensors, memory-mapped: pages are read as the comparison reaches them."""
    return dict(torch.load(os.path.join(path, entry["file"]), mmap=True, weights_only=True))


class CallWatch:
    """During one call of a candidate: exceptions raised in its own file that it caught and
    went on from (a try/except that falls back, say to the reference's code), and calls into
    the reference Model's code. Outside timing: a tracer slows every Python line."""

    _QUIET = (StopIteration, StopAsyncIteration, GeneratorExit)

    def __init__(self, w: Workload):
        self.file = w.problem_file
        self.codes = w.reference_codes
        self.caught: list[str] = []
        self.reference_calls = 0
        self._mine: dict[Any, bool] = {}
        self._old: Any = None

    def __enter__(self) -> CallWatch:
        self._old = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.settrace(self._old)

    def _global(self, frame: Any, event: str, arg: Any) -> Any:
        code = frame.f_code
        if code in self.codes:
            self.reference_calls += 1
        mine = self._mine.get(code)
        if mine is None:
            mine = self._mine[code] = os.path.abspath(code.co_filename) == self.file
        return self._local if mine else None

    def _local(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "exception" and not issubclass(arg[0], self._QUIET):
            text = f"{arg[0].__name__}: {arg[1]}".splitlines()[0][:200]
            if text not in self.caught:
                self.caught.append(text)
        return self._local

    def problems(self) -> list[str]:
        out = []
        if self.caught:
            out.append(
                f"the candidate caught an exception in its own code during a call and went on "
                f"({self.caught[0]}): a try/except fallback hides which code ran"
            )
        if self.reference_calls:
            out.append(
                f"the candidate calls the reference Model's code during a call "
                f"({self.reference_calls} time(s)): it runs the reference, not a new kernel"
            )
        return out


class Degeneracy:
    """Whether the reference's outputs can show anything: near-constant outputs, or outputs
    that do not change with the seed, pass a wrong candidate as easily as a right one."""

    def __init__(self) -> None:
        self.prints: dict[str, set[tuple[float, ...]]] = {}
        self.constant: dict[str, bool] = {}
        self.trials = 0

    def add(self, outs: dict[str, torch.Tensor]) -> None:
        self.trials += 1
        for name, t in outs.items():
            if not t.is_floating_point() or t.numel() == 0:
                continue
            lo, hi, total = math.inf, -math.inf, 0.0
            for _lo, x, _y in _flat_chunks(t, t):
                xd = x.to(torch.float64)
                fin = xd[xd.isfinite()]
                if fin.numel():
                    lo, hi = min(lo, float(fin.min())), max(hi, float(fin.max()))
                    total += float(fin.sum())
            flat = t.reshape(-1)
            sample = flat[:: max(1, flat.numel() // 64)][:64].to(torch.float64).tolist()
            self.prints.setdefault(name, set()).add((total, *sample))
            near = hi - lo <= 1e-6 * max(abs(hi), abs(lo), 1e-30) if hi >= lo else True
            self.constant[name] = self.constant.get(name, True) and near

    def warnings(self) -> list[str]:
        out = []
        for name, const in self.constant.items():
            if const:
                out.append(
                    f"the reference's output {name} is nearly constant: a check on it proves "
                    "little (choose inputs or weights that make it vary)"
                )
            elif self.trials >= 2 and len(self.prints.get(name, ())) == 1:
                out.append(
                    f"the reference's output {name} does not change with the seed: a check on "
                    "it proves little"
                )
        return out


REFILL = "refill"  # the same input objects, new contents written into them
TIMED_SALT = 424_243


def _refill(w: Workload, job: dict[str, Any], device: torch.device, dtype: Any, seed: int) -> None:
    """Write new contents (another seed's inputs) into the workload's own input tensors."""
    other = load_workload(
        job["kind"], job["spec"], job["root"], device, dtype, (seed + 1_000_000_007) % 2**31,
        bool(job.get("training")), inputs_from=job.get("inputs_from"), reinit=False,
    )  # fmt: skip
    with torch.no_grad():
        for x, y in zip(w.inputs, other.inputs, strict=False):
            if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape:
                x.copy_(y)


def timed_phase(
    job: dict[str, Any], device: torch.device, dtype: torch.dtype | None, seed: int
) -> dict[str, Any]:
    """The timed loop of the check: warm-up, then RECHECK_CALLS timed calls on fresh
    inputs, every one re-checked against the reference in this process, alternately
    reference first and candidate first, freed memory poisoned in between."""
    training, reinit = bool(job.get("training")), bool(job.get("reinit", True))
    w = load_workload(
        job["kind"], job["spec"], job["root"], device, dtype, seed, training,
        inputs_from=job.get("inputs_from"), reinit=reinit,
    )  # fmt: skip
    ref = load_reference(job["inputs_from"], job["root"], device, dtype, seed, training, reinit)
    feed = InputFeed(w, seed + TIMED_SALT)
    warm_up(w, training, seed, 3, 3, 1.0, 5.0, feed)
    declared = job.get("tolerance")
    folder = str(job.get("save") or _scratch())
    recheck = Recheck(ref, tuple(declared) if declared else None, "timed-loop re-check:", folder)
    timed_loop(w, training, seed, feed, CallTimer(device, None), lambda n: n < RECHECK_CALLS,
               recheck)  # fmt: skip
    refuse_patched_timers()
    return {
        "calls": recheck.calls,
        "failures": recheck.failures[:20],
        "failed": len(recheck.failures),
        "worst": recheck.worst,
        "catch": f"a candidate wrong on {FLAKY_SHARE:.0%} of calls is caught with probability "
        f"{1 - (1 - FLAKY_SHARE) ** recheck.calls:.4f} in {recheck.calls} calls",
    }


def capture(job: dict[str, Any], device: torch.device, dtype: torch.dtype | None) -> dict:
    """Run the trials one at a time: save each (when asked) and compare it with the reference's
    saved trial (when asked) before the next one runs, so memory holds one trial at a time."""
    training = bool(job.get("training"))
    seed0 = int(job.get("seed", 0))
    n = int(job.get("trials", 5))
    stress = bool(job.get("stress", True))
    repeat = bool(job.get("repeat", True))
    reinit = bool(job.get("reinit", True))
    declared = tuple(job["tolerance"]) if job.get("tolerance") else None
    save, ref_dir = job.get("save"), job.get("compare_to")
    ref_index = read_index(ref_dir) if ref_dir else None
    _fixed_mmap_threshold()
    plan = [(seed0 + i, "random") for i in range(n)]
    if stress:  # and the refill: a first pass's (more trials when close do without)
        plan += [(seed0, k) for k in STRESS_KINDS] + [(seed0, REFILL)]
    comparer = Comparer(bool(job.get("exact")), declared) if ref_index is not None else None
    timed_ahead = (
        ref_index is not None
        and job["kind"] == "kernelbench"
        and bool(job.get("inputs_from"))
        and bool(job.get("timed_recheck", True))
    )
    many_repeats = ref_index is not None and not timed_ahead
    if save:
        os.makedirs(save, exist_ok=True)
    trials: list[dict[str, Any]] = []
    warnings: list[str] = []
    watched: list[str] = []
    repeat_diffs: dict[str, int] = {}
    repeat_calls = 0
    degenerate = Degeneracy()
    source, layout, reinit_count = "", [], 0
    first: dict[str, Any] = {}
    for seed, kind in plan:
        w = load_workload(
            job["kind"],
            job["spec"],
            job["root"],
            device,
            dtype,
            seed,
            training,
            inputs_from=job.get("inputs_from"),
            reinit=reinit,
        )
        refuse_patched_timers()
        source, layout, reinit_count = w.source, w.layout, w.reinit_count
        warnings += [x for x in w.warnings if x not in warnings]
        if kind not in ("random", REFILL):
            if not any(isinstance(x, torch.Tensor) and x.is_floating_point() for x in w.inputs):
                continue  # nothing to scale: both sides skip it alike
            w.inputs = stress_inputs(w.inputs, kind, seed)
        if kind == REFILL:
            # A cache keyed on the input object (or its pointer) returns the first call's
            # output for the second: the same tensors, holding another seed's values now.
            capture_step(w, training, seed, copy=False)
            _refill(w, job, device, dtype, seed)
        digest = _digest(w.inputs) if job["kind"] == "torch" else None
        # The call's own tensors, not copies (memory: one output, not two)...
        if w.candidate and not trials:
            with CallWatch(w) as watch:
                outs, none = capture_step(w, training, seed, copy=False)
            watched += [p for p in watch.problems() if p not in watched]
        else:
            outs, none = capture_step(w, training, seed, copy=False)
        meta = w.last_meta
        if repeat and kind == "random":
            # Without the timed loop's 17 re-checked calls (a torch:MODULE:CALLABLE variant),
            # the first trial calls RECHECK_CALLS times in all: a candidate wrong on a
            # quarter of its calls differs in one of them with probability >= 99%.
            for _ in range(RECHECK_CALLS - 1 if many_repeats and not trials else 1):
                again, _ = capture_step(w, training, seed, copy=False)
                if _shares(outs, again):  # ...unless the next call writes into the same buffers
                    del outs, again
                    outs, none = capture_step(w, training, seed, copy=True)
                    again, _ = capture_step(w, training, seed, copy=False)
                for name, diff in _repeat_diffs(outs, again).items():
                    repeat_diffs[name] = repeat_diffs.get(name, 0) + diff
                repeat_calls += 1
                del again
        del w
        outs = {k: _own(v) for k, v in outs.items()}
        if kind == "random":
            degenerate.add(outs)
        entry = {
            "seed": seed,
            "kind": kind,
            "file": f"trial-{len(trials):03d}.pt",
            "none_grads": none,
            "inputs_digest": digest,
            "meta": meta,
        }
        if not first:
            first = {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in outs.items()}
        if save:
            torch.save(outs, os.path.join(str(save), str(entry["file"])))
        if comparer is not None and ref_index is not None:
            ref_trials = ref_index.get("trials", [])
            if len(trials) < len(ref_trials):
                ref_entry = ref_trials[len(trials)]
                ref_outs = load_trial(str(ref_dir), ref_entry)
                comparer.add(ref_entry, ref_outs, entry, outs)
                del ref_outs
            else:
                comparer.problems.append(f"the reference has no trial {len(trials)} ({kind})")
        trials.append(entry)
        sizes = _storage_nbytes(outs)
        del outs
        poison_freed(sizes, device)  # the next trial cannot find this one's values
        _trim()
    timed: dict[str, Any] = {}
    if comparer is not None and timed_ahead:
        timed = timed_phase(job, device, dtype, seed0)
    index = {
        "format": 2,
        "source": source,
        "training": training,
        "trials": trials,
        "warnings": warnings,
        "repeat_diffs": repeat_diffs,
        "repeat_calls": repeat_calls,
        "layout": layout,
        "degenerate": degenerate.warnings(),
    }
    options = {
        "trials": n,
        "seeds": [s for s, k in plan if k == "random"],
        "inputs": (
            "the reference's get_inputs()/get_init_inputs()"
            if job.get("inputs_from")
            else "this side's own"
        ),
        "reinit": f"{reinit_count} parameter/buffer tensors re-initialised at random (by "
        f"position and seed)"
        if reinit and reinit_count
        else ("off" if not reinit else "nothing to re-initialise"),
        "stress": [k for k in STRESS_KINDS if any(t["kind"] == k for t in trials)] or "off",
        "repeat_check": repeat,
        "repeat_calls": repeat_calls,
        "refill": "the same input objects called again with new contents (a cached result)",
        "freed_memory": "poisoned with NaN between trials and between the two sides' calls",
        "rel_and_ulp_over": "|ref| > atol (differences where |ref| <= atol are counted apart)",
        "ulp_quantiles": f"from a sample of at most {ULP_SAMPLE} values per output and trial",
        "comparison": f"trial by trial, {CHUNK} elements at a time, float64 per chunk",
        "tolerance": (
            f"declared in the contract: rtol {declared[0]:g}, atol {declared[1]:g}"
            if declared
            else "the reference dtype's"
        ),
    }
    if timed:
        options["timed_recheck"] = timed["catch"]
    if save:
        tmp = os.path.join(save, INDEX + ".tmp")
        with open(tmp, "w") as f:
            json.dump(_clean({**index, "options": options}), f)
        os.replace(tmp, os.path.join(save, INDEX))
    body: dict[str, Any] = {
        "source": source,
        "outputs": first,
        "trials": len(trials),
        "warnings": warnings,
        "repeat_diffs": repeat_diffs,
        "options": options,
    }
    if comparer is not None and ref_index is not None:
        body.update(comparer.result(ref_index, index))
        body["warnings"] = warnings + [x for x in ref_index.get("degenerate") or [] if x]
        extra = list(watched) + list(timed.get("failures") or [])
        if extra:
            body["problems"] = list(body.get("problems") or []) + extra
            body["passed"] = False
        if timed:
            body["timed_recheck"] = timed
    return body


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


def tolerance(
    ref: torch.dtype,
    new: torch.dtype,
    exact: bool,
    declared: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """The reference dtype's tolerance, never the candidate's (a float16 output does not
    earn float16's looser one); a tolerance the contract declared replaces it."""
    if exact:
        return 0.0, 0.0
    if declared is not None:
        return float(declared[0]), float(declared[1])
    return _TOLERANCES.get(str(ref).removeprefix("torch."), (0.0, 0.0))


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
    return bit_diffs(a, b) == 0


def _quantile(sorted_values: torch.Tensor, q: float) -> float:
    n = sorted_values.numel()
    if n == 0:
        return 0.0
    k = min(n - 1, max(0, math.ceil(q * n) - 1))
    return float(sorted_values[k])


class OutputStats:
    """Error statistics of one output, accumulated trial by trial and chunk by chunk: only
    the chunk being compared is ever in float64 (see docs/torch_workloads.md)."""

    def __init__(self, name: str, exact: bool, declared: tuple[float, float] | None = None):
        self.exact = exact
        self.declared = declared
        self.s: dict[str, Any] = {
            "output": name,
            "shape_equal": True,
            "dtype_equal": True,
            "bit_identical": True,
            "mismatches": 0,
            "mismatch_share": 0.0,
            "nan_ref": 0,
            "nan_new": 0,
            "inf_ref": 0,
            "inf_new": 0,
            "nonfinite_positions_match": True,
            "signed_zero_diffs": 0,
            "near_zero_diffs": 0,
            "worst_index": [],
        }
        self.total = 0
        self.abs_sum, self.abs_n = 0.0, 0
        self.max_abs: float | None = None
        self.max_rel: float | None = None
        self.ulp_max: float | None = None
        self.ulps: list[torch.Tensor] = []
        self.ulp_counted = 0
        self.closeness = 0.0
        self.worst_score = -math.inf
        self.worst: tuple[int, list[int], float, float] | None = None
        self.nonfinite_worst: tuple[int, list[int], float, float] | None = None
        self.seeds: list[int] = []
        self.gen = torch.Generator().manual_seed(0)

    def add(self, trial: int, seed: int, r: torch.Tensor, n: torch.Tensor) -> None:
        s = self.s
        self.seeds.append(seed)
        if "ref_shape" not in s:
            s.update(
                ref_shape=list(r.shape),
                new_shape=list(n.shape),
                ref_dtype=str(r.dtype).removeprefix("torch."),
                new_dtype=str(n.dtype).removeprefix("torch."),
            )
            rtol, atol = tolerance(r.dtype, n.dtype, self.exact, self.declared)
            s["rtol"], s["atol"] = rtol, atol
            if self.declared is not None:
                s["declared_tolerance"] = True
        if r.shape != n.shape:
            s["shape_equal"] = False
            s["bit_identical"] = False
            s["new_shape"] = list(n.shape)
            self.total += max(int(r.numel()), int(n.numel()), 1)
            s["mismatches"] += max(int(r.numel()), int(n.numel()), 1)
            return
        if r.dtype != n.dtype:
            s["dtype_equal"] = False
            s["bit_identical"] = False
            # Only a tolerance declared in the contract allows a precision change.
            s["dtype_refused"] = self.declared is None
        rtol, atol = s["rtol"], s["atol"]
        coarse = r.dtype if _precision_rank(r.dtype) <= _precision_rank(n.dtype) else n.dtype
        floor = max(atol, _finfo_tiny(coarse) if coarse.is_floating_point else 0.0)
        complex_ = r.is_complex() or n.is_complex()
        shape = list(r.shape)
        self.total += r.numel()
        rate = min(1.0, ULP_SAMPLE / max(1, r.numel()))
        for lo, rc, nc in _flat_chunks(r, n):
            same = rc.dtype == nc.dtype and bit_diffs(rc, nc) == 0
            s["bit_identical"] = s["bit_identical"] and same
            if same and not complex_:
                self._identical(rc, floor, rate)
                continue
            if complex_:
                rd = torch.view_as_real(rc.to(torch.complex128)).reshape(-1)
                nd = torch.view_as_real(nc.to(torch.complex128)).reshape(-1)
                step_of = 2
            else:
                rd, nd = rc.to(torch.float64), nc.to(torch.float64)
                step_of = 1
            rnan, nnan = rd.isnan(), nd.isnan()
            s["nan_ref"] += int(rnan.sum())
            s["nan_new"] += int(nnan.sum())
            s["inf_ref"] += int(rd.isinf().sum())
            s["inf_new"] += int(nd.isinf().sum())
            same_nf = (
                (rnan == nnan) & (rd.isposinf() == nd.isposinf()) & (rd.isneginf() == nd.isneginf())
            )
            bad_nf = ~same_nf
            if bool(bad_nf.any()):
                s["nonfinite_positions_match"] = False
            finite = rd.isfinite() & nd.isfinite()
            zero = (rd == 0) & (nd == 0) & finite
            sz = zero & (rd.signbit() != nd.signbit())
            s["signed_zero_diffs"] += int(sz.sum())
            diff = torch.where(finite, (rd - nd).abs(), torch.zeros_like(rd))
            allowed = atol + rtol * rd.abs()
            over = finite & (diff > allowed)
            if self.exact:
                over = over | sz
            s["mismatches"] += int((over | bad_nf).sum())
            if bool(finite.any()):
                fd = diff[finite]
                self.abs_sum += float(fd.sum())
                self.abs_n += int(fd.numel())
                m = float(fd.max())
                self.max_abs = m if self.max_abs is None else max(self.max_abs, m)
                # Relative error and ULPs only where |ref| is above atol: near zero both
                # explode without meaning anything; those differences are counted apart.
                big = finite & (rd.abs() > floor)
                s["near_zero_diffs"] += int((finite & ~big & (diff > 0)).sum())
                if bool(big.any()):
                    rel = float((diff[big] / rd.abs()[big]).max())
                    self.max_rel = rel if self.max_rel is None else max(self.max_rel, rel)
                    if not complex_:
                        u = _ulps(rc[big], nc[big], coarse)
                        um = float(u.max())
                        self.ulp_max = um if self.ulp_max is None else max(self.ulp_max, um)
                        self.ulp_counted += int(u.numel())
                        if rate < 1.0:
                            k = max(1, math.ceil(u.numel() * rate))
                            pick = torch.randint(0, u.numel(), (k,), generator=self.gen)
                            u = u[pick]
                        self.ulps.append(u)
                ratio = diff / allowed.clamp_min(1e-300) if (atol or rtol) else diff
                score = torch.where(finite, ratio, torch.full_like(diff, -math.inf))
                at = int(score.argmax())
                best = float(score[at])
                if atol or rtol:
                    self.closeness = max(self.closeness, best)
                if best > self.worst_score:
                    self.worst_score = best
                    self.worst = (
                        trial,
                        _unravel(lo + at // step_of, shape),
                        float(rd[at]),
                        float(nd[at]),
                    )
            if self.nonfinite_worst is None and bool(bad_nf.any()):
                at = int(bad_nf.nonzero()[0, 0])
                self.nonfinite_worst = (
                    trial,
                    _unravel(lo + at // step_of, shape),
                    float(rd[at]),
                    float(nd[at]),
                )

    def _identical(self, rc: torch.Tensor, floor: float, rate: float) -> None:
        """A chunk that is bit-identical: no error anywhere, only the special values to count
        (the common case of a C1 change, at a few operations per element instead of forty)."""
        s = self.s
        rd = rc.to(torch.float64) if rc.dtype != torch.float64 else rc
        nan, inf = int(rd.isnan().sum()), int(rd.isinf().sum())
        s["nan_ref"] += nan
        s["nan_new"] += nan
        s["inf_ref"] += inf
        s["inf_new"] += inf
        n_finite = rd.numel() - nan - inf
        if n_finite:
            self.abs_n += n_finite
            self.max_abs = self.max_abs or 0.0
            n_big = int((rd.abs() > floor).sum()) - inf
            if n_big > 0:
                self.max_rel = self.max_rel or 0.0
                self.ulp_max = self.ulp_max or 0.0
                self.ulp_counted += n_big
                k = n_big if rate >= 1.0 else max(1, math.ceil(n_big * rate))
                self.ulps.append(torch.zeros(k, dtype=torch.float64))
            if self.worst is None:
                self.worst_score = 0.0
                self.worst = (max(0, len(self.seeds) - 1), [], 0.0, 0.0)

    def finish(self) -> dict[str, Any]:
        s = dict(self.s)
        s.setdefault("ref_shape", [])
        s.setdefault("new_shape", [])
        s.setdefault("ref_dtype", "")
        s.setdefault("new_dtype", "")
        if not s["shape_equal"]:
            s.update(mismatch_share=1.0, passed=False, bit_identical=False)
            return s
        chosen = self.nonfinite_worst or self.worst
        if chosen is not None:
            s["worst_trial"], s["worst_index"], s["worst_ref"], s["worst_new"] = chosen
            s["worst_seed"] = self.seeds[chosen[0]] if chosen[0] < len(self.seeds) else None
        s["max_abs"] = self.max_abs
        s["mean_abs"] = self.abs_sum / self.abs_n if self.abs_n else None
        s["max_rel"] = self.max_rel
        s["closeness"] = self.closeness
        s["ulp_max"] = s["ulp_p50"] = s["ulp_p99"] = None
        if self.ulps:
            kept = torch.cat(self.ulps).sort().values
            s["ulp_max"] = self.ulp_max
            s["ulp_p50"] = _quantile(kept, 0.5)
            s["ulp_p99"] = _quantile(kept, 0.99)
            s["ulp_sampled"] = int(kept.numel()) < self.ulp_counted
        s["mismatch_share"] = s["mismatches"] / self.total if self.total else 0.0
        s["passed"] = s["bit_identical"] if self.exact else s["mismatches"] == 0
        if s.get("dtype_refused"):
            s["passed"] = False
        for key in ("worst_ref", "worst_new", "max_abs", "max_rel", "mean_abs", "ulp_max"):
            v = s.get(key)
            if isinstance(v, float) and not math.isfinite(v):
                s[key] = None if math.isnan(v) else (1e308 if v > 0 else -1e308)
        return s


def compare_one(
    name: str, refs: list[torch.Tensor], news: list[torch.Tensor], seeds: list[int], exact: bool
) -> dict[str, Any]:
    """Error statistics of one output over all trials (see docs/torch_workloads.md)."""
    acc = OutputStats(name, exact)
    for trial, (r, n) in enumerate(zip(refs, news, strict=True)):
        acc.add(trial, seeds[trial] if trial < len(seeds) else trial, r, n)
    return acc.finish()


def _unravel(flat: int, shape: list[int]) -> list[int]:
    idx = []
    for dim in reversed(shape):
        idx.append(flat % dim if dim else 0)
        flat = flat // dim if dim else 0
    return list(reversed(idx))


def _none_stats(name: str, side: str) -> dict[str, Any]:
    return {
        "output": name,
        "shape_equal": True,
        "dtype_equal": True,
        "passed": False,
        "mismatches": 1,
        "mismatch_share": 1.0,
        "none_on": side,
    }


class Comparer:
    """Both sides' trials, one pair at a time: main trials, then each stress trial apart."""

    def __init__(self, exact: bool, declared: tuple[float, float] | None = None):
        self.exact = exact
        self.declared = declared
        self.meta_problems: list[str] = []
        self.main: dict[str, OutputStats] = {}
        self.stress: dict[str, dict[str, OutputStats]] = {}
        self.problems: list[str] = []
        self.seeds: list[int] = []
        self.new_seeds: list[int] = []
        self.pairs: list[tuple[str, str]] | None = None
        self.missing: list[str] = []
        self.none_on: dict[str, str] = {}
        self.digests_differ: list[int] = []

    def _pair(self, ref: dict[str, Any], new: dict[str, Any], re: dict, ne: dict) -> None:
        ref_names, new_names = list(ref), list(new)
        pairs = [(n, n) for n in ref_names if n in new_names]
        missing = [n for n in ref_names if n not in new_names]
        extra = [n for n in new_names if n not in ref_names]
        new_none, ref_none = set(ne.get("none_grads") or []), set(re.get("none_grads") or [])
        for n in [x for x in missing if x in new_none]:
            self.none_on[n] = "variant"
            missing.remove(n)
        for n in [x for x in extra if x in ref_none]:
            self.none_on[n] = "baseline"
            extra.remove(n)
        ref_grads = [n for n in missing if n.startswith("grad:param:")]
        new_grads = [n for n in extra if n.startswith("grad:param:")]
        if ref_grads and len(ref_grads) == len(new_grads):
            # A rewritten module may name its parameters differently: pair them in order.
            pairs += list(zip(ref_grads, new_grads, strict=True))
            missing = [n for n in missing if n not in ref_grads]
            extra = [n for n in extra if n not in new_grads]
        for n in missing:
            self.problems.append(f"output {n} missing on the variant side")
        for n in extra:
            self.problems.append(f"output {n} only on the variant side")
        for n, side in self.none_on.items():
            self.problems.append(
                f"gradient {n.removeprefix('grad:')} is None on the {side} side "
                "(that side's call does not use it)"
            )
        self.pairs, self.missing = pairs, missing

    def add(
        self,
        ref_entry: dict[str, Any],
        ref: dict[str, torch.Tensor],
        new_entry: dict[str, Any],
        new: dict[str, torch.Tensor],
    ) -> None:
        kind = ref_entry.get("kind", "random")
        if kind != new_entry.get("kind", "random") or ref_entry["seed"] != new_entry["seed"]:
            self.problems.append("the two sides ran different trials")
        rd, nd = ref_entry.get("inputs_digest"), new_entry.get("inputs_digest")
        if rd and nd and rd != nd:
            self.digests_differ.append(int(ref_entry["seed"]))
        if kind == "random":
            self.seeds.append(int(ref_entry["seed"]))
            self.new_seeds.append(int(new_entry["seed"]))
        if self.pairs is None:
            self._pair(ref, new, ref_entry, new_entry)
        target = self.main if kind == "random" else self.stress.setdefault(kind, {})
        trial = len(self.seeds) - 1 if kind == "random" else 0
        for rn, nn in self.pairs or []:
            if rn not in ref or nn not in new:
                self.problems.append(f"output {rn} is not in every trial")
                continue
            label = rn if rn == nn else f"{rn} ~ {nn}"
            rm, nm = (ref_entry.get("meta") or {}).get(rn), (new_entry.get("meta") or {}).get(nn)
            if rm and nm:
                for p in meta_problems(label, rm, nm, self.declared is not None):
                    if p not in self.meta_problems:
                        self.meta_problems.append(p)
            acc = target.get(label)
            if acc is None:
                acc = target[label] = OutputStats(label, self.exact, self.declared)
            acc.add(trial, int(ref_entry["seed"]), ref[rn], new[nn])

    def result(self, ref_index: dict[str, Any], new_index: dict[str, Any]) -> dict[str, Any]:
        stats = [a.finish() for a in self.main.values()]
        for n in self.missing:
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
        stats += [_none_stats(n, side) for n, side in self.none_on.items()]
        stress = []
        for kind, accs in self.stress.items():
            done = [a.finish() for a in accs.values()]
            stress.append(
                {
                    "kind": kind,
                    "passed": all(d.get("passed") for d in done),
                    "failed_outputs": [d["output"] for d in done if not d.get("passed")],
                    "mismatches": sum(int(d.get("mismatches") or 0) for d in done),
                    "nonfinite_positions_match": all(
                        d.get("nonfinite_positions_match", True) for d in done
                    ),
                    "nan_ref": sum(int(d.get("nan_ref") or 0) for d in done),
                    "nan_new": sum(int(d.get("nan_new") or 0) for d in done),
                    "inf_ref": sum(int(d.get("inf_ref") or 0) for d in done),
                    "inf_new": sum(int(d.get("inf_new") or 0) for d in done),
                    "max_abs": max((d.get("max_abs") or 0.0 for d in done), default=None),
                }
            )
        refill = next((x for x in stress if x["kind"] == REFILL), None)
        stress = [x for x in stress if x["kind"] != REFILL]
        if refill is not None and not refill["passed"]:
            self.problems.append(
                f"same input objects, new contents: the output did not follow the new values "
                f"({refill['mismatches']} mismatches, max abs {_num(refill['max_abs'])}): a "
                "result cached by input object or pointer"
            )
        ref_rep = dict(ref_index.get("repeat_diffs") or {})
        new_rep = dict(new_index.get("repeat_diffs") or {})
        # The variant changing between two calls on the same input, where the reference does
        # not, is a semantic change (determinism), kept apart from error against the reference.
        nondet = sorted(n for n in new_rep if not ref_rep.get(n))
        problems = list(self.problems) + self.meta_problems
        if self.digests_differ:
            problems.append(
                "the variant builds other inputs than the baseline for seeds "
                + ", ".join(str(s) for s in self.digests_differ)
            )
        for n in nondet:
            problems.append(
                f"{n}: the variant is nondeterministic: two calls on the same input differ "
                f"in {new_rep[n]} element(s); the baseline's do not"
            )
        passed = (
            bool(stats)
            and not self.missing
            and all(st.get("passed") for st in stats)
            and all(x["passed"] for x in stress)
            and (refill is None or refill["passed"])
            and not nondet
            and not self.digests_differ
            and not self.meta_problems
            and self.seeds == self.new_seeds
        )
        if self.seeds != self.new_seeds:
            problems.append("the two sides ran different seeds")
        return {
            "passed": passed,
            "exact": self.exact,
            "seeds": self.seeds,
            "stats": stats,
            "stress": stress,
            "refill": refill,
            "nondeterminism": {"baseline": ref_rep, "variant": new_rep},
            "problems": problems,
            "closeness": max((float(s.get("closeness") or 0.0) for s in stats), default=0.0),
            "precision": next(
                (f"at {s['new_dtype']}" for s in stats if s.get("dtype_equal") is False), ""
            ),
            "bit_identical": bool(stats) and all(s.get("bit_identical") for s in stats),
        }


def compare(ref: dict, new: dict, exact: bool) -> dict[str, Any]:
    """Compare two in-memory captures ({"trials": [{"seed", "outputs", …}]})."""
    c = Comparer(exact)
    for re_, ne in zip(ref["trials"], new["trials"], strict=False):
        c.add(re_, re_["outputs"], ne, ne["outputs"])
    if len(ref["trials"]) != len(new["trials"]):
        c.problems.append("the two sides ran different seeds")
        c.new_seeds.append(-1)
    return c.result(ref, new)


def compare_saved(ref_dir: str, new_dir: str, exact: bool) -> dict[str, Any]:
    """Compare two saved captures trial by trial, both memory-mapped."""
    ref_index, new_index = read_index(ref_dir), read_index(new_dir)
    c = Comparer(exact)
    for re_, ne in zip(ref_index["trials"], new_index["trials"], strict=False):
        r, n = load_trial(ref_dir, re_), load_trial(new_dir, ne)
        c.add(re_, r, ne, n)
        del r, n
    if len(ref_index["trials"]) != len(new_index["trials"]):
        c.problems.append("the two sides ran different trials")
        c.new_seeds.append(-1)
    return c.result(ref_index, new_index)


# ---------------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="torch_worker.py", description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=("time", "audit", "profile", "outputs", "compare", "batch"))
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
        "--warmup-max",
        type=int,
        default=int(env("GPUOPT_TORCH_WARMUP_MAX", "50")),
        help="time: at most this many warm-up calls while waiting for a steady per-call time",
    )
    p.add_argument(
        "--warmup-tol",
        type=float,
        default=float(env("GPUOPT_TORCH_WARMUP_TOL", "0.05")),
        help="time: steady when the last 5 warm-up calls lie within this share of their median",
    )
    p.add_argument(
        "--warmup-max-s",
        type=float,
        default=float(env("GPUOPT_TORCH_WARMUP_MAX_S", "5")),
        help="time: at most this many seconds of warm-up",
    )
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
    p.add_argument(
        "--tolerance",
        type=float,
        nargs=2,
        metavar=("RTOL", "ATOL"),
        help="a tolerance declared by the contract (allows a precision change)",
    )
    p.add_argument("--inputs-from", help="outputs: the reference's KernelBench file for inputs")
    p.add_argument("--no-stress", dest="stress", action="store_false", default=True)
    p.add_argument("--no-repeat", dest="repeat", action="store_false", default=True)
    p.add_argument("--no-reinit", dest="reinit", action="store_false", default=True)
    p.add_argument("--save", help="outputs: write the captured tensors here (torch.save)")
    p.add_argument("--compare-to", help="outputs: compare against this saved capture")
    p.add_argument("--new", help="compare: the variant's saved capture (--compare-to is the ref)")
    p.add_argument("--exact", action="store_true", help="require bit-identical outputs")
    p.add_argument("--jobs", help="batch: a JSON list of jobs (mode, kind, spec, training, …)")
    p.add_argument("--trace", help="profile: write the Chrome/Perfetto trace here")
    p.add_argument("--steps", type=int, default=3, help="profile: steps under the profiler")
    p.add_argument(
        "--no-probe",
        dest="probe",
        action="store_false",
        default=True,
        help="profile: do not measure the machine's ceilings",
    )
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
    _JOB_THREADS.clear()
    _JOB_THREADS.update(_threads())
    try:
        declared = os.environ.get("GPUOPT_TORCH_TOLERANCE", "").replace(" ", "")
        if not job.get("tolerance") and declared:  # the contract's, in the workload's env
            job = {**job, "tolerance": [float(x) for x in declared.split(",")][:2]}
        exact = bool(job.get("exact"))
        if mode == "compare":
            if not (job.get("compare_to") and job.get("new")):
                raise WorkloadError("compare needs --compare-to REF and --new NEW")
            if os.path.isdir(job["compare_to"]) and os.path.isdir(job["new"]):
                body.update(compare_saved(job["compare_to"], job["new"], exact))
            else:  # the single-file captures of older versions
                ref = torch.load(job["compare_to"], weights_only=True)
                new = torch.load(job["new"], weights_only=True)
                body.update(compare(ref, new, exact))
            body.update(_memory())
            return body
        device = _device(job.get("device"))
        dtype = _dtype(job.get("dtype"))
        training = bool(job.get("training"))
        seed = int(job.get("seed", 0))
        body["device"] = str(device)
        if device.type == "cuda":
            body["device_name"] = torch.cuda.get_device_name(device)
        if mode == "outputs":
            if job.get("save"):
                job = {**job, "save": os.path.abspath(job["save"])}
            body.update(capture(job, device, dtype))
            first = body.get("outputs") or {}
            body["dtype"] = _dtype_label(dtype, []) or next(
                (str(v["dtype"]).removeprefix("torch.") for v in first.values()), ""
            )
            body.update(_memory())
            return body
        reference_file = _reference_file(job) if mode == "time" else None
        w = load_workload(
            job["kind"], job["spec"], job["root"], device, dtype, seed, training,
            inputs_from=reference_file,
        )  # fmt: skip
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
                    warmup_max=int(job.get("warmup_max", 50)),
                    warmup_tol=float(job.get("warmup_tol", 0.05)),
                    warmup_max_s=float(job.get("warmup_max_s", 5.0)),
                    reference=(
                        load_reference(
                            reference_file, job["root"], device, dtype, seed, training, False
                        )
                        if reference_file and w.candidate
                        else None
                    ),
                    tol=tuple(job["tolerance"]) if job.get("tolerance") else None,
                )
            )
            body["options"] = _options(job)
            body["warnings"] = list(w.warnings)
        elif mode == "audit":
            body.update(audit_workload(w, training, seed))
        elif mode == "profile":
            trace = job.get("trace")
            body.update(
                profile_workload(
                    w,
                    training,
                    seed,
                    trace=os.path.abspath(trace) if trace else None,
                    probe=bool(job.get("probe", True)),
                    steps=max(1, int(job.get("steps", 3))),
                )
            )
        else:
            raise WorkloadError(f"unknown mode {mode!r}")
    except Exception as exc:
        one = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
        body["error"] = one[:500]
        body["traceback"] = traceback.format_exc()[-4000:]
    finally:
        restore_timers()
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


REFERENCE_ROOT_ENV = "GPUOPT_TORCH_REFERENCE_ROOT"


def _reference_file(job: dict[str, Any]) -> str | None:
    """The reference's KernelBench file for a timed replicate: --inputs-from, or the same
    path under GPUOPT_TORCH_REFERENCE_ROOT (the baseline's checkout, set by the round)."""
    if job.get("kind") != "kernelbench":
        return None
    if job.get("inputs_from"):
        return str(job["inputs_from"])
    root = os.environ.get(REFERENCE_ROOT_ENV)
    if not root:
        return None
    path = job["spec"] if os.path.isabs(job["spec"]) else os.path.join(root, job["spec"])
    return path if os.path.isfile(path) else None


def _dtype_label(dtype: torch.dtype | None, tensors: list[torch.Tensor]) -> str:
    if dtype is not None:
        return str(dtype).removeprefix("torch.")
    for t in tensors:
        if t.is_floating_point():
            return str(t.dtype).removeprefix("torch.")
    return ""


if __name__ == "__main__":
    sys.exit(main())
