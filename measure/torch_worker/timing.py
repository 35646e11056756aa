"""The `time` mode: fresh inputs per call, the timer out of the candidate's reach, warm-up,
the timed loop, and re-checks of timed outputs against the reference."""

from __future__ import annotations

import math
import os
import statistics
from typing import Any

import torch

from .base import (
    _JOB_THREADS,
    CHUNK,
    METRIC_KEY,
    WorkloadError,
    _cuda_sync,
    _Event,
    _event_elapsed,
    _event_record,
    _event_wait,
    _mono_ns,
    _num,
    _own,
    _perf,
    _storage_nbytes,
    _threads,
    _to_cpu,
    is_plain_tensor,
    meta_problems,
    output_meta,
    poison_count,
    poison_freed,
    refuse_new_threads,
    refuse_patched_timers,
)
from .compare import OutputStats
from .workload import Workload, step


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
    or a content it saw before (a cache keyed on any of them never hits). An input whose
    memory lands where an earlier one's was (the allocator reuses freed memory: the usual
    case) is copied into a view at a new offset of a slightly larger buffer, so its data
    pointer is one no call saw; memory holds the new set and one copied tensor at most."""

    ALIGN = 64  # bytes: a moved input stays as aligned as the allocator's own

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
            return  # a factory without tensor inputs: said in the options
        self.w.inputs = []  # the last set is freed first: one set in memory, not two
        t0 = _perf()
        self.k += 1
        made = list(self.w.make_inputs((self.seed * 1_000_003 + 7_777 * self.k) % 2**62, True))
        for i, x in enumerate(made):
            if type(x) is torch.Tensor and x.numel() and x.data_ptr() in self.seen:
                made[i] = self._moved(made[i])  # the old tensor is freed here
                self.repeats_avoided += 1
            if isinstance(made[i], torch.Tensor) and made[i].numel():
                self.seen.add(made[i].data_ptr())
        self.w.inputs = made
        self.made_ms += (_perf() - t0) * 1e3

    def _moved(self, x: torch.Tensor) -> torch.Tensor:
        """`x`'s values, shape, strides, dtype and device at a data pointer no call saw."""
        item = x.element_size()
        step_ = max(1, self.ALIGN // item)  # elements per offset step
        extent = 1 + sum((n - 1) * abs(st) for n, st in zip(x.shape, x.stride(), strict=True))
        slots = 64 + self.repeats_avoided % 4096  # a size that changes moves mmap's placement
        while True:
            buf = torch.empty(extent + slots * step_, dtype=x.dtype, device=x.device)
            base = buf.data_ptr()
            free = [j for j in range(slots) if base + j * step_ * item not in self.seen]
            if free:
                break
            slots *= 2  # every offset seen (a long run on one address): a larger buffer
        with torch.no_grad():
            y = buf.as_strided(x.shape, x.stride(), free[0] * step_)
            y.copy_(x)
        del buf
        return y.requires_grad_(x.requires_grad)


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

    def after(
        self, i: int, inputs: list[Any], outs: dict[str, Any], order: str, release: bool = False
    ) -> None:
        """After timed call i (`outs` is emptied): the checks, and the reference now if it
        did not run first. With `release` (the next call gets a new set) `inputs` is emptied
        once both sides ran, so the comparison holds two outputs, not the inputs besides."""
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
            if release:
                inputs.clear()
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
            recheck.after(i, w.inputs, outs, order, release=feed.fresh)  # empties outs
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
            else "fresh per call from the factory (called again with a new seed)"
            if feed.fresh and not w.problem_file
            else "fresh per call from this file's get_inputs() (no reference given)"
            if feed.fresh
            else "the factory's one set, the same every call (it returned no tensor inputs)"
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
