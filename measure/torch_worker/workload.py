"""Loading a workload (a torch factory or a KernelBench file) and running one step of it."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import os
import sys
from typing import Any

import torch

from .base import WorkloadError, _fresh_host_rng, _seed_all, _to


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
    inputs = _grad_inputs(list(made.get("inputs") or []), training, made)
    params_raw = made.get("params") or {}
    if isinstance(params_raw, torch.nn.Module):
        params: dict[str, Any] = dict(params_raw.named_parameters())
    elif isinstance(params_raw, dict):
        params = dict(params_raw)
    else:
        params = {str(i): p for i, p in enumerate(params_raw)}
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
    if any(isinstance(x, torch.Tensor) for x in inputs):

        def make_inputs(k: int, on_device: bool = False) -> list[Any]:
            """Another set from the factory, called again with seed k (its fn is not used):
            each timed call gets inputs no earlier call saw, as from get_inputs()."""
            _seed_all(k)
            again = factory(**({**kwargs, "seed": k} if "seed" in kwargs else kwargs))
            _fresh_host_rng()
            more = again.get("inputs") if isinstance(again, dict) else None
            return _grad_inputs(list(more or []), training, again)

        w.make_inputs = make_inputs
    return w


def _grad_inputs(inputs: list[Any], training: bool, made: Any) -> list[Any]:
    """On a training path without parameters, floating inputs get gradients (what is then
    compared); as they came otherwise."""
    params = made.get("params") if isinstance(made, dict) else None
    if (
        not training
        or params
        or any(isinstance(x, torch.Tensor) and x.requires_grad for x in inputs)
    ):
        return inputs
    return [
        x.detach().requires_grad_(True)
        if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())
        else x
        for x in inputs
    ]


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
    the same seed (and re-initialised alike), for the re-check of timed calls. It holds no
    inputs of its own: each re-check hands it the timed call's (memory: one input set)."""
    ref = _load_kernelbench(inputs_from, root, device, dtype, seed, training, None, reinit)
    ref.inputs = []
    return ref


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


_REINIT_SALT = 104729


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
