"""The worker's arguments, its jobs and its one JSON line."""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import Any

import torch

from .audit import audit_workload
from .base import _JOB_THREADS, WorkloadError, _clean, _device, _dtype, _threads, restore_timers
from .capture import capture
from .compare import compare, compare_saved
from .profiling import profile_workload
from .timing import _memory, _options, time_workload
from .workload import load_reference, load_workload


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="torch_worker", description=__doc__.split("\n")[0])
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
