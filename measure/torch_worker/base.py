"""Shared pieces of the worker: tolerances, view-op names, the errors it reports, the guards
on timers and threads, freed-memory poison, output metadata, seeding, and small helpers."""

from __future__ import annotations

import math
import os
import sys
import time
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


def _num(v: Any) -> str:
    return "n/a" if v is None else f"{float(v):.3g}"


def _first_float_dtype(inputs: list[Any]) -> torch.dtype | None:
    for t in inputs:
        if isinstance(t, torch.Tensor) and t.is_floating_point():
            return t.dtype
    return None


CHUNK = 1 << 18  # elements compared at once: float64 temporaries of 2 MiB each


def _to_cpu(t: torch.Tensor) -> torch.Tensor:
    """A contiguous CPU copy (one copy, never a view: a later call may overwrite the storage)."""
    t = t.detach()
    out = torch.empty(tuple(t.shape), dtype=t.dtype, device="cpu")
    return out.copy_(t)


def _own(t: torch.Tensor) -> torch.Tensor:
    """`t` itself when it is contiguous and owns its whole storage, else a copy that does:
    torch.save writes whole storages, and a view of an input would save the input."""
    if t.is_contiguous() and t.untyped_storage().nbytes() == t.numel() * t.element_size():
        return t
    return _to_cpu(t)


_INT_OF = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}


def _clean(obj: Any) -> Any:
    """JSON has no NaN or Inf: non-finite floats become null (counts carry that news)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj
