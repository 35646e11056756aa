"""The `outputs` mode: outputs and gradients over seeded trials, stress inputs, repeat
calls and timed-phase re-checks, saved for comparison."""

from __future__ import annotations

import json
import math
import os
import random
import sys
from typing import Any

import torch

from .base import (
    _JOB_THREADS,
    CHUNK,
    WorkloadError,
    _clean,
    _own,
    _storage_nbytes,
    _threads,
    _to_cpu,
    is_plain_tensor,
    output_meta,
    poison_freed,
    refuse_new_threads,
    refuse_patched_timers,
)
from .compare import (
    INDEX,
    REFILL,
    ULP_SAMPLE,
    Comparer,
    _flat_chunks,
    load_trial,
    read_index,
)
from .spill import Spill
from .timing import (
    FLAKY_SHARE,
    RECHECK_CALLS,
    CallTimer,
    InputFeed,
    Recheck,
    _scratch,
    _sync,
    timed_loop,
    warm_up,
)
from .workload import Workload, load_reference, load_workload, step

# Extra trials on the first seed's inputs, transformed: what randn inputs never show.
STRESS_KINDS = ("x100", "x1e-3", "zeros", "nan_inf")


_INJECT_SALT = 31337


def stress_inputs(inputs: list[Any], kind: str, seed: int) -> list[Any]:
    """A stress trial's inputs: scaled ×100 or ×1e-3, zeros, or NaN, +Inf, -Inf injected.

    The trial's inputs are its own (made for it): each is changed in place where it can be
    (contiguous, a leaf, its storage no other input's), so a stress trial holds one input,
    not two; three positions are drawn without a permutation of them all (that was an int64
    tensor of twice a float32 input's size)."""
    floats = [x for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()]
    storages = [x.untyped_storage().data_ptr() for x in floats if x.numel()]
    in_place = len(set(storages)) == len(storages)
    out: list[Any] = []
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            out.append(x)
            continue
        with torch.no_grad():
            own = in_place and x.is_contiguous() and x.grad_fn is None
            y = x.detach() if own else x.detach().clone().contiguous()
            if kind == "x100":
                y.mul_(100)
            elif kind == "x1e-3":
                y.mul_(1e-3)
            elif kind == "zeros":
                y.zero_()
            elif kind == "nan_inf":
                flat = y.view(-1)
                # float8 formats without an Inf would turn it into NaN: leave them as they are
                if flat.numel() and x.element_size() > 1:
                    draw = random.Random(seed + _INJECT_SALT + i)
                    picks = _special_positions(draw, flat.numel(), y.shape[-1] if y.dim() else 1)
                    idx = torch.tensor(picks, dtype=torch.long, device=flat.device)
                    special = torch.tensor([math.nan, math.inf, -math.inf], dtype=flat.dtype)
                    flat[idx] = special[: idx.numel()].to(flat.device)
            else:
                raise WorkloadError(f"unknown stress kind {kind!r}")
        out.append(y.detach().requires_grad_(x.requires_grad))
    return out


def _special_positions(draw: random.Random, numel: int, row: int) -> list[int]:
    """Up to three flat positions for NaN, +Inf and -Inf, in three different rows (slices
    along the last dimension) where there are three: a row-wise kernel spreads a special
    over its row, and a NaN in the +Inf's row hid how each propagates (a softmax without
    its max subtraction passed on one seed in eight)."""
    rows = numel // row if row else 0
    if rows >= 3:
        return [r * row + draw.randrange(row) for r in draw.sample(range(rows), 3)]
    return draw.sample(range(numel), min(3, numel))


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
                chunk_sum = float(xd.sum())
                # A finite sum: every term is finite, and the chunk is its own finite part
                # (the masked copy and isfinite() were most of a 100 MB output's cost).
                fin = xd if math.isfinite(chunk_sum) else xd[xd.isfinite()]
                if fin.numel():
                    least, most = torch.aminmax(fin)
                    lo, hi = min(lo, float(least)), max(hi, float(most))
                    total += chunk_sum if fin is xd else float(fin.sum())
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
        spill: Spill | None = None
        if repeat and kind == "random":
            # The first call's outputs wait in a file while the step is called again (memory:
            # one output beside the inputs, not two; a call that writes into the buffer it
            # returned before cannot change them). Without the timed loop's 17 re-checked
            # calls (a torch:MODULE:CALLABLE variant), the first trial calls RECHECK_CALLS
            # times in all: a candidate wrong on a quarter of its calls differs in one of
            # them with probability >= 99%.
            spill = Spill(outs, str(save or _scratch()))
            outs.clear()
            del outs
            try:
                for _ in range(RECHECK_CALLS - 1 if many_repeats and not trials else 1):
                    again, _ = capture_step(w, training, seed, copy=False)
                    for name, diff in spill.diffs(again).items():
                        repeat_diffs[name] = repeat_diffs.get(name, 0) + diff
                    repeat_calls += 1
                    again.clear()
                    del again
            except BaseException:
                spill.close()
                raise
        del w
        if spill is not None:  # the inputs and the weights are gone: the outputs come back
            try:
                outs = spill.load()
            finally:
                spill.close()
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
