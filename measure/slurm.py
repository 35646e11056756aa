"""Slurm, through its own commands: submit a batch job, read its state, cancel it.

gpuopt writes no scheduler of its own and talks to Slurm only through sbatch, squeue,
scontrol and scancel (they honour SLURM_CONF and the cluster's own configuration). A job
is one batch script; what it runs is the caller's.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from measure.errors import GpuoptError

__all__ = [
    "ACTIVE_STATES",
    "JobState",
    "SlurmError",
    "available",
    "cancel",
    "job_state",
    "release",
    "submit",
]

# States in which a job may still run (or is running); any other state is its last.
ACTIVE_STATES = frozenset(
    {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING",
     "STAGE_OUT", "SIGNALING", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"}
)  # fmt: skip
COMMAND_TIMEOUT_S = 60


class SlurmError(GpuoptError):
    """A Slurm command failed or is missing: one line, with Slurm's own words."""


@dataclass(frozen=True)
class JobState:
    job_id: str
    state: str  # Slurm's word: PENDING, RUNNING, COMPLETED, CANCELLED, TIMEOUT, ...
    node: str = ""  # where it runs (or ran); "" while pending
    reason: str = ""  # why it waits (JobHeldUser, Resources, ...), "" or "None" otherwise
    exit_code: str = ""

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    def words(self) -> str:
        where = f" on {self.node}" if self.node and self.node != "(null)" else ""
        why = f" ({self.reason})" if self.reason and self.reason != "None" else ""
        return f"Slurm job {self.job_id} {self.state}{where}{why}"


def available() -> str | None:
    """None when sbatch can be used here, else why not (one line)."""
    missing = [c for c in ("sbatch", "squeue", "scontrol", "scancel") if not shutil.which(c)]
    if missing:
        return f"Slurm's commands are not installed here ({', '.join(missing)} missing)"
    return None


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            args, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        raise SlurmError(f"{args[0]}: not installed here") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{shlex.join(args)}: no answer in {COMMAND_TIMEOUT_S} s") from None


def _said(done: subprocess.CompletedProcess[str]) -> str:
    text = (done.stderr or done.stdout).strip().splitlines()
    return text[-1] if text else f"exit {done.returncode}"


def submit(script: Path, options: list[str], *, cwd: Path) -> str:
    """sbatch the script with the options; the job id."""
    done = _run(["sbatch", "--parsable", f"--chdir={cwd}", *options, str(script)])
    if done.returncode != 0:
        raise SlurmError(f"sbatch refused the job: {_said(done)}")
    return done.stdout.strip().split(";")[0]


def job_state(job_id: str) -> JobState | None:
    """The job's state, from squeue while Slurm lists it and from scontrol after; None
    when Slurm no longer knows the job (ended longer ago than MinJobAge)."""
    done = _run(["squeue", "-h", "-j", job_id, "-o", "%T|%N|%r"])
    line = done.stdout.strip().splitlines()
    if done.returncode == 0 and line:
        state, node, reason = ([*line[0].split("|"), "", ""])[:3]
        return JobState(job_id, state.strip(), node.strip(), reason.strip())
    done = _run(["scontrol", "-o", "show", "job", job_id])
    if done.returncode != 0 or not done.stdout.strip():
        return None
    fields = dict(part.split("=", 1) for part in done.stdout.split() if "=" in part)
    return JobState(
        job_id,
        fields.get("JobState", "UNKNOWN"),
        fields.get("NodeList", ""),
        fields.get("Reason", ""),
        fields.get("ExitCode", ""),
    )


def cancel(job_id: str, *, signal: str | None = None, batch_only: bool = False) -> None:
    """scancel the job (or send it a signal: `batch_only` to its batch script alone)."""
    args = ["scancel"]
    if signal:
        args += [f"--signal={signal}"]
    if batch_only:
        args += ["--batch"]
    done = _run([*args, job_id])
    if done.returncode != 0:
        raise SlurmError(f"scancel {job_id}: {_said(done)}")


def release(job_id: str) -> None:
    """scontrol release: let a held job be scheduled."""
    done = _run(["scontrol", "release", job_id])
    if done.returncode != 0:
        raise SlurmError(f"scontrol release {job_id}: {_said(done)}")
