"""`gpuopt bisect --slurm`: each step of a bisection measured as one Slurm job.

The bisection's record stays in the login node's ledger, as a local one's does. Each
probe (its commits, the search so far) is written to a job folder and sbatched; the node
measures the step (session.cluster.bisect_node) and journals its runs and the step. The
login side follows the job as it follows a round's (session.cluster.jobs.follow_job:
the journal imported once by its offset, the job's state said as it changes) and takes
the step from the journal's `step` line. A step is stored once: a job of the same step
number found in the ledger's job list (the login side died while it ran) is followed or
read again, never submitted twice. A job that ended with no step (scancel, a node
failure, a time limit) gives an interrupted step, which ends the bisection INTERRUPTED;
`--resume` measures that step again.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ledger import Ledger
from ledger.journal_import import jobs, put_job
from measure import slurm
from measure.journal import read_from
from session import models as m
from session.bisect.models import Bisection, Side, Step
from session.bisect.search import Probe, Search
from session.cluster.jobs import SlurmJob, _script, follow_job
from session.cluster.node import JOB_SPEC
from session.conduct.common import ConductError, Progress
from session.errors import BadInput, WorkFailed

__all__ = ["KIND", "SlurmSteps", "step_of_journal"]

KIND = "bisect-step"


def step_of_journal(path: Path) -> tuple[Step | None, str]:
    """The step a job's journal holds (None if none yet), and the error it ended with."""
    step, error = None, ""
    for entry, _ in read_from(path, 0):
        if entry.get("kind") == "step":
            if entry.get("error"):
                error = str(entry["error"])
            elif entry.get("step"):
                step = Step.model_validate(entry["step"])
        elif entry.get("kind") == "end" and entry.get("error") and not error:
            error = str(entry["error"])
    return step, error


class SlurmSteps:
    """The conductor's stepper (session.bisect.conduct.Stepper) for Slurm jobs."""

    def __init__(
        self,
        ledger: Ledger,
        sbatch: list[str],
        *,
        job_base: Path | None = None,
        telemetry: bool = True,
        say: Callable[[str], None] | None = None,
        stop: threading.Event | None = None,
    ):
        why = slurm.available()
        if why:
            raise BadInput(f"--slurm: {why}")
        self.ledger, self.sbatch, self.telemetry = ledger, list(sbatch), telemetry
        self.base = job_base or ledger.path.with_name(ledger.path.name + ".jobs")
        self.say, self.stop = say, stop  # say: the job's lines (queued, running on ...)
        self.followed: list[SlurmJob] = []  # every job this stepper followed, in order

    def __call__(
        self, rec: Bisection, state: Search, probe: Probe, stopped: Any, live: Any
    ) -> Step:
        number = len(rec.steps) + 1
        job = self._earlier(rec, number, probe) or self._submit(rec, probe, number)
        self.followed.append(job)

        def show(p: Progress) -> None:
            if p.phase == "job":
                if self.say is not None:
                    self.say(f"step {number}: {p.message}")
            elif live is not None and p.message:
                live(p.message)

        result = follow_job(self.ledger, job, progress=show, stop=self.stop)
        step, error = step_of_journal(job.journal)
        if error:
            raise ConductError(error)
        if step is not None and step.number == number:
            return step
        state_word = result.state.state if result.state else "gone from Slurm's list"
        return Step(number=number, kind=probe.kind, lo=probe.lo, hi=probe.hi, mid=probe.mid,
                    side=Side.INTERRUPTED,
                    reason=f"the Slurm job {job.job_id} ended {state_word} before its step "
                    "did")  # fmt: skip

    def _earlier(self, rec: Bisection, number: int, probe: Probe) -> SlurmJob | None:
        """A job of this step submitted before (the login side was lost while it ran):
        followed again if it may still give the step."""
        for r in reversed(jobs(self.ledger)):
            if r.get("kind") != KIND or r.get("bisection") != rec.id or r.get("number") != number:
                continue
            if r.get("probe") != [probe.lo, probe.hi, probe.mid]:
                continue
            job = SlurmJob(r["uuid"], Path(r["dir"]), str(r["job_id"]), KIND,
                           r.get("session_id") or "")  # fmt: skip
            step, error = step_of_journal(job.journal)
            if step is not None or error or not r.get("state"):
                return job  # its step (or its error) is there, or it may still come
        return None

    def _submit(self, rec: Bisection, probe: Probe, number: int) -> SlurmJob:
        uuid = m.new_id()
        job_dir = self.base / uuid
        job_dir.mkdir(parents=True, exist_ok=False)
        spec = {"uuid": uuid, "kind": KIND, "session_id": rec.session_id,
                "bisection": rec.model_dump(mode="json"),
                "probe": {"lo": probe.lo, "hi": probe.hi, "mid": probe.mid},
                "telemetry": self.telemetry}  # fmt: skip
        (job_dir / JOB_SPEC).write_text(json.dumps(spec, indent=2))
        script = job_dir / "job.sh"
        script.write_text(_script(job_dir))
        script.chmod(0o755)
        name = f"--job-name=gpuopt-bisect-{rec.id[:8]}-{number}"
        try:
            job_id = slurm.submit(
                script, [name, f"--output={job_dir}/slurm-%j.out", *self.sbatch], cwd=job_dir
            )
        except slurm.SlurmError as exc:
            raise WorkFailed(str(exc)) from None
        job = SlurmJob(uuid, job_dir, job_id, KIND, rec.session_id or "")
        put_job(self.ledger, uuid, {**job.record(), "bisection": rec.id, "number": number,
                                    "probe": [probe.lo, probe.hi, probe.mid],
                                    "submitted": m.utcnow().isoformat()})  # fmt: skip
        return job
