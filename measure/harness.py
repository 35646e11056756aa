"""Commands for torch workloads, and the passes that run the worker outside timing.

`workload_command` gives the engine the shell command of one timed replicate: the worker (the
package `measure/torch_worker/`, its `__main__.py` run by path with the contract's interpreter)
times the workload in-process and prints one JSON line whose `gpuopt_value` is the median of
its samples (ms).

`audit` and `capture` run the worker in a subprocess for the audit pass (kernels, operators,
allocations, peak) and the correctness pass (outputs and gradients over seeded trials, with
error statistics against a saved reference). This module never imports torch.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure import orphans
from measure.errors import BadInput
from measure.redact import Redactor

WORKER = Path(__file__).resolve().with_name("torch_worker") / "__main__.py"
METRIC_KEY = "gpuopt_value"
# The baseline's checkout, for a variant's timed replicate (the worker reads it: inputs
# from the reference's KernelBench file, timed calls re-checked against its model).
REFERENCE_ROOT_ENV = "GPUOPT_TORCH_REFERENCE_ROOT"
METRIC_SOURCE = "json"
KINDS = ("torch", "kernelbench")
_TAIL = 64 * 1024


class HarnessError(BadInput, ValueError):
    """A torch workload spec that cannot run; the message is one line (still a ValueError
    for the callers that catch that)."""


def split_spec(kind: Any, spec: str) -> tuple[str, str]:
    """("torch", "pkg.mod:bench") from kind "torch" and "torch:pkg.mod:bench" (prefix optional)."""
    name = str(getattr(kind, "value", kind))
    if name not in KINDS:
        raise HarnessError(f"not a torch workload kind: {name!r} (torch or kernelbench)")
    target = spec.strip()
    if target.startswith(name + ":"):
        target = target[len(name) + 1 :]
    if not target:
        raise HarnessError(f"{name} workload needs a target after '{name}:'")
    if name == "torch":
        module, sep, attr = target.rpartition(":")
        if not sep or not module or not attr:
            raise HarnessError(f"torch workload must be torch:MODULE:CALLABLE, not {spec!r}")
    return name, target


def worker_command(
    mode: str,
    kind: Any,
    spec: str,
    *,
    python: str | None = None,
    training: bool = False,
    options: Sequence[str] = (),
) -> str:
    """The shell command that runs the worker in MODE; run it with cwd = the checkout."""
    args = worker_script_args(mode, kind, spec, training, options)
    argv = [python or sys.executable, "-B", *args]
    # `python` may itself be a command with arguments ("uv run python"): keep it unquoted then.
    head = python if python and " " in python.strip() else shlex.quote(argv[0])
    return " ".join([head, *(shlex.quote(a) for a in argv[1:])])


def worker_script_args(
    mode: str, kind: Any, spec: str, training: bool = False, options: Sequence[str] = ()
) -> list[str]:
    """The worker script and its arguments (what follows `python -B`)."""
    name, target = split_spec(kind, spec)
    args = [str(WORKER), mode, "--kind", name, "--spec", target]
    if training:
        args.append("--training")
    return args + list(options)


def workload_command(
    kind: Any,
    spec: str,
    *,
    python: str | None = None,
    training: bool = False,
    options: Sequence[str] = (),
) -> tuple[str, str, str]:
    """(command, metric_source, metric_pattern) of one timed replicate of a torch workload.

    The command prints one JSON line; its `gpuopt_value` is the median milliseconds per call of
    the in-process samples (one value per process: one replicate for the paired statistics).
    """
    return (
        worker_command("time", kind, spec, python=python, training=training, options=options),
        METRIC_SOURCE,
        METRIC_KEY,
    )


@dataclass
class WorkerResult:
    ok: bool
    data: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    wall_s: float = 0.0
    error: str = ""

    @property
    def output_tail(self) -> str:
        """What a person needs to see when it failed: the error, then stderr's tail."""
        parts = [self.error, self.data.get("traceback", ""), self.stderr_tail[-4000:]]
        return "\n".join(p for p in parts if p).strip()[-_TAIL:]


def parse_worker_output(stdout: str) -> dict[str, Any] | None:
    """The worker's JSON object: the last stdout line that is one (the workload may print)."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not (line.startswith("{") and '"gpuopt_worker"' in line):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


# After the worker ended, how long to wait for its pipes to close before sweeping again,
# everywhere (a descendant handed to another process than us), and how many times.
DRAIN_WAIT_S, DRAIN_SWEEPS = 2.0, 3


def _drain(proc: subprocess.Popen[bytes], run_mark: str) -> tuple[bytes, bytes]:
    """The rest of an ended worker's output, sweeping again what still holds its pipes."""
    for _ in range(DRAIN_SWEEPS):
        try:
            return proc.communicate(timeout=DRAIN_WAIT_S)
        except subprocess.TimeoutExpired:
            orphans.sweep(orphans.RUN_VAR, run_mark, group=proc.pid, everywhere=True)
    return proc.communicate()


def run_worker(
    command: str,
    cwd: str | Path,
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 600.0,
    launcher: str | None = None,
) -> WorkerResult:
    """Run a worker command (bash -c, own process group, killed whole on timeout)."""
    full = f"{launcher} {command}" if launcher else command
    run_env = dict(os.environ)
    run_env.update(env or {})
    run_env["PYTHONDONTWRITEBYTECODE"] = "1"
    run_mark = orphans.new_token()
    orphans.mark(run_env, run_mark)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            ["bash", "-c", full],
            cwd=str(cwd),
            env=run_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return WorkerResult(ok=False, error=f"cannot start the worker: {exc}")
    timed_out = False
    deadline = started + timeout_s
    try:
        while True:
            try:  # retried after a timeout without losing output (documented)
                out_b, err_b = proc.communicate(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                if proc.poll() is None and time.monotonic() < deadline:
                    continue
                timed_out = proc.returncode is None
                if timed_out:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    proc.wait()  # reaped by Popen, which keeps its status
                # Ended, but what it left (setsid too) holds the pipes: they go now.
                orphans.sweep(orphans.RUN_VAR, run_mark, group=proc.pid)
                out_b, err_b = _drain(proc, run_mark)
                break
    finally:
        orphans.sweep(orphans.RUN_VAR, run_mark, group=proc.pid)
    wall = time.monotonic() - started
    out = out_b.decode("utf-8", "replace")
    err = err_b.decode("utf-8", "replace")
    data = parse_worker_output(out) or {}
    result = WorkerResult(
        ok=False,
        data=data,
        exit_code=None if timed_out else proc.returncode,
        stdout_tail=out[-_TAIL:],
        stderr_tail=err[-_TAIL:],
        wall_s=wall,
    )
    if timed_out:
        result.error = f"the worker ran past {timeout_s:g} s and was stopped"
    elif data.get("error"):
        result.error = str(data["error"])
    elif proc.returncode != 0:
        last = next((ln for ln in reversed(err.splitlines()) if ln.strip()), "")
        result.error = f"the worker exited with status {proc.returncode}" + (
            f": {last.strip()[:300]}" if last else ""
        )
    elif not data:
        result.error = "the worker printed no result line"
    else:
        result.ok = True
    # What is kept of the output holds no secret of the environment the worker had.
    hide = Redactor(run_env)
    result.stdout_tail, result.stderr_tail = hide(result.stdout_tail), hide(result.stderr_tail)
    result.error = hide(result.error)
    for key in ("traceback", "error"):
        if isinstance(data.get(key), str):
            data[key] = hide(data[key])
    return result


def audit(
    kind: Any,
    spec: str,
    worktree: str | Path,
    *,
    python: str | None = None,
    training: bool = False,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 600.0,
    launcher: str | None = None,
) -> WorkerResult:
    """The audit pass in one process: operators, kernel launches, allocations, peak bytes."""
    command = worker_command("audit", kind, spec, python=python, training=training)
    return run_worker(command, worktree, env=env, timeout_s=timeout_s, launcher=launcher)


def capture(
    kind: Any,
    spec: str,
    worktree: str | Path,
    save: str | Path,
    *,
    trials: int = 5,
    seed: int = 0,
    compare_to: str | Path | None = None,
    exact: bool = False,
    python: str | None = None,
    training: bool = False,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 600.0,
    launcher: str | None = None,
) -> WorkerResult:
    """Run `trials` seeded trials (seed, seed+1, …), save outputs (and gradients on a training
    path) to `save`; with `compare_to`, the worker adds error statistics against it."""
    options = ["--trials", str(trials), "--seed", str(seed), "--save", str(Path(save).resolve())]
    if compare_to is not None:
        options += ["--compare-to", str(Path(compare_to).resolve())]
    if exact:
        options.append("--exact")
    command = worker_command(
        "outputs", kind, spec, python=python, training=training, options=options
    )
    return run_worker(command, worktree, env=env, timeout_s=timeout_s, launcher=launcher)


def run_jobs(
    jobs: Sequence[Mapping[str, Any]],
    worktree: str | Path,
    *,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 600.0,
    launcher: str | None = None,
) -> list[WorkerResult]:
    """Several audit/outputs jobs in one worker process (torch is imported once).

    Each job is a dict: name, mode ("audit" or "outputs"), kind, spec (prefix optional),
    training, and for outputs: trials, seed, save, compare_to, exact. Returns one result per
    job, in order; a job that failed inside the worker does not stop the others.
    """
    if not jobs:
        return []
    prepared = []
    for job in jobs:
        kind, target = split_spec(job["kind"], str(job["spec"]))
        item = {k: v for k, v in job.items() if v is not None}
        item.update(kind=kind, spec=target)
        # Paths are the caller's: the worker runs in the worktree, where a relative one
        # would land (a trace beside a relative --ledger was written into the checkout).
        for key in ("save", "compare_to", "trace", "inputs_from"):
            if key in item:
                item[key] = str(Path(item[key]).resolve())
        prepared.append(item)
    argv = [python or sys.executable, "-B", str(WORKER), "batch", "--jobs", json.dumps(prepared)]
    head = python if python and " " in python.strip() else shlex.quote(argv[0])
    command = " ".join([head, *(shlex.quote(a) for a in argv[1:])])
    whole = run_worker(
        command, worktree, env=env, timeout_s=timeout_s * len(prepared), launcher=launcher
    )
    found = whole.data.get("results") if isinstance(whole.data.get("results"), list) else None
    out: list[WorkerResult] = []
    for i, _job in enumerate(prepared):
        data = found[i] if found is not None and i < len(found) else {}
        if not data:
            error = whole.error or "the worker gave no result for this job"
            out.append(
                WorkerResult(
                    ok=False,
                    exit_code=whole.exit_code,
                    stdout_tail=whole.stdout_tail,
                    stderr_tail=whole.stderr_tail,
                    wall_s=whole.wall_s,
                    error=error,
                )
            )
            continue
        out.append(
            WorkerResult(
                ok="error" not in data,
                data={"torch": whole.data.get("torch", ""), **data},
                exit_code=whole.exit_code if "error" not in data else 1,
                stdout_tail=whole.stdout_tail,
                stderr_tail=whole.stderr_tail,
                wall_s=whole.wall_s,
                error=str(data.get("error", "")),
            )
        )
    return out
