"""What a torch workload's number means, and what its replicates say about their own timing.

`metric_label` names the figure a workload reports ("time per call (ms), median of the calls
after warm-up" for a torch workload, the contract's metric otherwise), so every output says
the same thing. `bimodal_flags` reads the runs of one arm: values in two separate modes are
flagged, with the per-run figures that follow the modes (page faults, system time, peak
RSS) and the likely cause and fix in words. `apply_env` reads `NAME=K=V` (the command
line's `new --env`) into the workloads' environments. `shim_warning` names a workload
whose program is a version manager's shim, with the real interpreter to use instead.
"""

from __future__ import annotations

import os
import shlex
import shutil
import statistics
import subprocess
from collections.abc import Iterable, Sequence
from typing import Any

from measure import stats
from measure.harness import parse_worker_output
from measure.redact import is_secret
from session import models as m

TORCH_KINDS = (m.WorkloadKind.TORCH, m.WorkloadKind.KERNELBENCH)
TORCH_METRICS = {
    "median": "time per call (ms), median of the calls after warm-up",
    "min": "time per call (ms), fastest call after warm-up",
}
# glibc reads these at process start; set on a CPU torch workload they keep freed blocks in
# the process instead of giving them back to the OS and faulting them in on the next call.
ALLOCATOR_ENV = {
    "MALLOC_MMAP_THRESHOLD_": "33554432",  # blocks up to 32 MiB (glibc's ceiling) from the heap
    "MALLOC_TRIM_THRESHOLD_": "68719476736",  # never trim the heap back
}
_ADVISED = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")  # in the advice's order
ALLOCATOR_ADVICE = (
    f"set {'/'.join(_ADVISED)} on the workload (gpuopt new "
    + " ".join(f"--env NAME={name}={ALLOCATOR_ENV[name]}" for name in _ADVISED)
    + "; MALLOC_MMAP_MAX_=0 for blocks over 32 MiB), or more warm-up calls (GPUOPT_TORCH_WARMUP)"
)


def torch_stat(w: m.Workload) -> str:
    """The statistic a torch workload's replicate reports: median (default) or min."""
    import os

    value = w.env.get("GPUOPT_TORCH_STAT") or os.environ.get("GPUOPT_TORCH_STAT") or "median"
    return value if value in TORCH_METRICS else "median"


def metric_label(contract: m.Contract, w: m.Workload) -> tuple[str, str]:
    """(name, unit) of the figure this workload's runs give."""
    if w.kind in TORCH_KINDS:
        return TORCH_METRICS[torch_stat(w)], "ms"
    return contract.metric.name, contract.metric.unit


def metric_text(contract: m.Contract, w: m.Workload) -> str:
    """e.g. "time per call (ms), median of the calls after warm-up", or "wall time (s)"."""
    name, unit = metric_label(contract, w)
    if w.kind in TORCH_KINDS or (unit and name.endswith(f"({unit})")):
        return name  # it names its unit already: never "time (ms) (ms)"
    return f"{name} ({unit or 'no unit'})"


def worker_report(stdout_tail: str) -> dict[str, Any]:
    """The torch worker's JSON line from a run's stdout (empty when there is none)."""
    return parse_worker_output(stdout_tail) or {}


_KEPT = (
    "metric",
    "stat",
    "unit",
    "samples",
    "median",
    "min",
    "max",
    "clock",
    "warmup_calls",
    "steady",
    "warmup_last_ms",
    "minor_faults_per_call",
    "major_faults_per_call",
    "minor_faults",
    "major_faults",
    "peak_rss_bytes",
    "options",
    "warning",
    "source",
    "device",
    "dtype",
)


def worker_summary(report: dict[str, Any]) -> dict[str, Any]:
    """What a run keeps of the worker's report (its settings and steady-state figures)."""
    return {k: report[k] for k in _KEPT if k in report}


def failure_text(run: m.Run, lines: int = 8) -> str:
    """The last lines of a failed run's exception: the worker's traceback, else stderr."""
    report = worker_report(run.stdout_tail)
    tb = str(report.get("traceback") or "").strip()
    if tb:
        return "\n".join(tb.splitlines()[-lines:])
    err = run.stderr_tail.strip()
    if err:
        return "\n".join(err.splitlines()[-lines:])
    return run.error


def _covariates(runs: Sequence[m.Run]) -> dict[str, list[float | None]]:
    def faults(r: m.Run) -> float | None:
        if r.minor_faults is not None:
            return float(r.minor_faults)
        v = r.worker.get("minor_faults")
        return float(v) if isinstance(v, (int, float)) else None

    def per_call(r: m.Run) -> float | None:
        v = r.worker.get("minor_faults_per_call")
        return float(v) if isinstance(v, (int, float)) else None

    def rss(r: m.Run) -> float | None:
        v = r.peak_rss_bytes or r.worker.get("peak_rss_bytes")
        return float(v) if isinstance(v, (int, float)) else None

    return {
        "page faults per call": [per_call(r) for r in runs],
        "page faults": [faults(r) for r in runs],
        "system time": [r.sys_s for r in runs],
        "peak RSS": [rss(r) for r in runs],
    }


FAULTS_APART = 64  # page faults per call (256 KiB of 4 KiB pages) that tell two modes apart


# Each mode of a flag holds this many different values at least: a metric of a few steps
# (a count, a rounded time) split 12/8 between 5 and 6 is not two modes of a process, and a
# flag makes the arm's comparisons untrusted (session.verdicts.two_modes).
DISTINCT_IN_A_MODE = 3


def _split_by_faults(runs: Sequence[m.Run], values: list[float]) -> stats.ModeSplit | None:
    """Two modes named by their cause: the runs' page faults per call fall into two groups
    (FAULTS_APART or more between them) and every faulting run is the slower (AUC ≥ 0.9).
    On a loaded machine the values' own gap can drown in noise while this stays plain."""
    per_call = _covariates(runs)["page faults per call"]
    if any(v is None for v in per_call):
        return None
    faults = [float(v or 0.0) + 1.0 for v in per_call]  # +1: a steady process has ~0
    by = stats.mode_split(faults, min_gap=0.7)
    if by is None:
        return None
    lo_f = statistics.median(faults[i] for i in by.low)
    hi_f = statistics.median(faults[i] for i in by.high)
    if hi_f - lo_f < FAULTS_APART:
        return None
    groups = stats.ModeSplit(by.low, by.high, (0.0, 0.0), (0.0, 0.0), by.gap, by.between)
    auc = stats.separation(groups, values)
    lo_v = [values[i] for i in by.low]
    hi_v = [values[i] for i in by.high]
    if auc is None or auc < 0.9 or statistics.median(hi_v) < 1.1 * statistics.median(lo_v):
        return None
    return stats.ModeSplit(
        by.low, by.high, (min(lo_v), max(lo_v)), (min(hi_v), max(hi_v)), by.gap, by.between
    )


def _apart(split: stats.ModeSplit, values: list[float | None], name: str) -> bool:
    """The covariate's modes differ by enough to matter: FAULTS_APART page faults per call,
    or 10% of the larger median for the other figures (a few faults more is no cause)."""
    lo = [v for i in split.low if (v := values[i]) is not None]
    hi = [v for i in split.high if (v := values[i]) is not None]
    a, b = statistics.median(lo), statistics.median(hi)
    if name == "page faults per call":
        return abs(b - a) >= FAULTS_APART
    return abs(b - a) >= 0.1 * max(abs(a), abs(b), 1e-12)


def bimodal_flag(runs: Sequence[m.Run]) -> dict[str, Any] | None:
    """A flag for one arm's replicate values, or None when they form one mode."""
    usable = [r for r in runs if r.status is m.RunStatus.OK and r.value is not None]
    values = [float(r.value) for r in usable]  # type: ignore[arg-type]
    split = stats.mode_split(values, min_distinct=DISTINCT_IN_A_MODE) or _split_by_faults(
        usable, values
    )
    if split is None:
        return None
    follows: dict[str, float] = {}
    for name, figure in _covariates(usable).items():
        auc = stats.separation(split, figure)
        if auc is not None and (auc >= 0.9 or auc <= 0.1) and _apart(split, figure, name):
            follows[name] = round(auc, 3)
    lo, hi = split.low_range, split.high_range
    modes = f"{lo[0]:.3g}–{lo[1]:.3g} and {hi[0]:.3g}–{hi[1]:.3g}"
    between = f", {len(split.between)} between" if split.between else ""
    words = (
        f"values split into two modes ({modes}, {len(split.low)}+{len(split.high)} runs{between})"
    )
    if any(k.startswith("page faults") or k == "peak RSS" for k in follows):
        why = (
            f" that follow {', '.join(follows)}: the allocator returns memory to the OS "
            f"between calls in some processes; {ALLOCATOR_ADVICE}"
        )
    elif follows:
        why = (
            f" that follow {', '.join(follows)}: the process spends its time in the kernel in "
            f"some runs (page faults, memory reclaim); {ALLOCATOR_ADVICE}"
        )
    else:
        why = (
            " that follow none of page faults, system time or peak RSS: look for another "
            "cause that differs between processes (CPU frequency, core or NUMA placement, "
            "thread count)"
        )
    return {
        "modes": [list(lo), list(hi)],
        "runs": [len(split.low), len(split.high)],
        "between": len(split.between),  # runs in neither mode (a process changed speed)
        "follows": follows,
        "medians": [
            statistics.median(float(usable[i].value or 0) for i in split.low),
            statistics.median(float(usable[i].value or 0) for i in split.high),
        ],
        "text": words + why,
    }


def bimodal_flags(
    runs: Iterable[m.Run], label: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Flags for every (arm, workload) whose counted runs are bimodal (warm-ups left out)."""
    groups: dict[tuple[str, str], list[m.Run]] = {}
    for r in runs:
        if not r.warmup:
            groups.setdefault((r.arm, r.workload), []).append(r)
    out = []
    for (arm, workload), rs in groups.items():
        flag = bimodal_flag(rs)
        if flag is not None:
            name = (label or {}).get(arm, arm)
            text = f"{name}/{workload}: {flag['text']}"
            out.append({**flag, "arm": name, "arm_id": arm, "workload": workload, "text": text})
    return out


def apply_env(workloads: Sequence[m.Workload], specs: Sequence[str]) -> list[m.Workload]:
    """Workloads with `NAME=K=V` settings (repeatable) added to their environments.

    ValueError, in words, for a spec without both `=` or a workload name not in the list.
    """
    by_name = {w.name: w.model_copy(deep=True) for w in workloads}
    for spec in specs:
        name, sep, rest = spec.partition("=")
        key, sep2, value = rest.partition("=")
        if not sep or not sep2 or not key.strip():
            raise ValueError(f"--env must be NAME=KEY=VALUE (workload, variable, value): {spec!r}")
        if name not in by_name:
            known = ", ".join(sorted(by_name)) or "none"
            raise ValueError(f"--env {spec!r}: no workload {name!r} (workloads: {known})")
        if "\0" in key or "\0" in value or "=" in key:
            raise ValueError(f"--env {spec!r}: not a usable environment variable")
        if is_secret(key.strip(), value):  # the spec holds the secret: never echoed
            raise ValueError(secret_env_advice(name, key.strip()))
        by_name[name].env[key.strip()] = value
    return [by_name[w.name] for w in workloads]


def secret_env_advice(workload: str, key: str) -> str:
    """Why a secret is not taken as a contract's --env value, and what to do instead."""
    return (
        f"--env {workload}={key}=…: that value looks secret, and a contract is stored in the "
        "ledger, its exports and every copy of them; nothing was written. Set it in the "
        f"shell that runs gpuopt instead (export {key}=…): every workload inherits "
        "gpuopt's environment, and its value is redacted from stored output"
    )


def metric_texts(contract: m.Contract) -> dict[str, str]:
    """Each workload's figure in words, by workload name."""
    return {w.name: metric_text(contract, w) for w in contract.workloads}


def metric_legend(contract: m.Contract) -> str:
    """The figure(s) a round compares: one text when every workload shares it, else
    `name: text` per workload (a torch workload's ms per call beside a command's wall time)."""
    texts = metric_texts(contract)
    if len(set(texts.values())) <= 1:
        name, unit = contract.metric.name, contract.metric.unit
        return next(iter(texts.values()), f"{name} ({unit or 'no unit'})")
    return "; ".join(f"{name}: {text}" for name, text in texts.items())


def error_tail(error: str, lines: int = 6) -> str:
    """The last lines of a stored exception (the end of a traceback says what went wrong)."""
    kept = [ln for ln in error.strip().splitlines() if ln.strip()]
    return "\n".join(kept[-lines:])


# ---------------------------------------------------------------------------- shims

SHIM_MANAGERS = {"pyenv": "/.pyenv/shims/", "asdf": "/.asdf/shims/", "mise": "/mise/shims/"}


def shim_warning(name: str, command: str, path: str | None = None) -> str | None:
    """The warning for a workload whose program is a version manager's shim (pyenv, asdf,
    mise): a shell script that looks the version up on every start, tens of milliseconds
    of noisy start-up in each run. It names the real interpreter to use; None otherwise."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and (("=" in words[0] and not words[0].startswith("=")) or words[0] == "env"):
        words = words[1:]  # FOO=1 python3 ..., env python3 ...
    if not words:
        return None
    program = words[0]
    found = program if "/" in program else shutil.which(program, path=path)
    if not found:
        return None
    where = os.path.abspath(found)
    manager = next((k for k, d in SHIM_MANAGERS.items() if d in where), None)
    if manager is None:
        return None
    real = _shim_target(manager, os.path.basename(where))
    use = f"use {real} instead" if real else f"use the interpreter `{manager} which` names"
    return (
        f"{name}: {program} is a {manager} shim ({where}): every run goes through its shell "
        f"script first, tens of milliseconds of noisy start-up; {use}"
    )


def _shim_target(manager: str, program: str) -> str | None:
    """What the shim runs (`pyenv which python3`), or None when it cannot be told."""
    try:
        out = subprocess.run(
            [manager, "which", program], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    line = out.stdout.strip().splitlines()
    return line[-1] if out.returncode == 0 and line else None
