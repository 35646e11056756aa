"""The login side of a Slurm job: submit it, follow its journal into the ledger, cancel it.

A round is one job on one node: the login side numbers it in the ledger (a placeholder
owned by the job, so no stale-round recovery closes it while the job waits or runs),
writes a consistent copy of the ledger and the job's spec into the job's folder, and
sbatches a script that runs `session.cluster.node` there. Following the job imports each
journal line once (ledger.journal_import) and says the job's state as it changes; when
the job is over, a round it did not close (scancel, a node failure, a time limit, a job
that never started) is closed INTERRUPTED with the runs that finished. A login-side
process that died is replaced by following the job again: the journal holds the rest.
"""

from __future__ import annotations

import json
import shlex
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger import Ledger, queries
from ledger.journal_import import import_entries, imported_offset, jobs, put_job, slim_seed
from measure import slurm
from measure.journal import read_from
from session import conduct
from session import models as m
from session.cluster.job_telemetry import JobFeed, TelemetryFn
from session.cluster.node import JOB_SPEC, JOURNAL, SEED
from session.conduct.common import Progress, ProgressFn, say
from session.conduct.recovery import open_round
from session.errors import BadInput, WorkFailed

__all__ = [
    "FollowResult",
    "PreparedJob",
    "SlurmJob",
    "baseline_where_contracted",
    "cancel_job",
    "catch_up",
    "close_left_open",
    "find_job",
    "follow_job",
    "import_journal",
    "job_options",
    "list_jobs",
    "prepare_job",
    "round_where_contracted",
    "submit_job",
]

POLL_S = 0.25  # how often the journal is read while the job runs
STATE_EVERY_S = 1.0  # how often Slurm is asked for the job's state


@dataclass(frozen=True)
class SlurmJob:
    uuid: str
    dir: Path
    job_id: str
    kind: str  # "round" or "baseline"
    session_id: str
    round_id: str | None = None

    @property
    def journal(self) -> Path:
        return self.dir / JOURNAL

    def record(self) -> dict[str, Any]:
        return {"dir": str(self.dir), "job_id": self.job_id, "kind": self.kind,
                "session_id": self.session_id, "round_id": self.round_id}  # fmt: skip


@dataclass
class FollowResult:
    job: SlurmJob
    state: slurm.JobState | None  # the job's last state Slurm gave
    ended: str | None  # what the job's journal says it ended as (None: no end line)
    error: str = ""  # the job's own error line, when it failed
    imported: int = 0  # records brought in while following
    round: m.Round | None = None
    closed_here: bool = False  # the round was closed by the login side, as interrupted
    notes: list[str] = field(default_factory=list)
    # The records the journal named while followed, by model: {"Baseline": [id, ...]}.
    records: dict[str, list[str]] = field(default_factory=dict)
    feed: JobFeed | None = None  # the telemetry panel's feed, when followed for one
    started: bool = False  # its journal's start line was read: it runs (or ran) on a node

    def last(self, model: str) -> str | None:
        ids = self.records.get(model) or []
        return ids[-1] if ids else None


def job_options(settings: m.SlurmSettings | None, **given: Any) -> list[str]:
    """sbatch's options: the contract's settings, with what was given on the command line
    in their place (None: not given)."""
    chosen = settings.model_copy() if settings else m.SlurmSettings()
    for name, value in given.items():
        if value not in (None, []):
            setattr(chosen, name, value)
    out = []
    for name in ("partition", "gres", "time", "account"):
        value = getattr(chosen, name)
        if value:
            out.append(f"--{name}={value}")
    return out + list(chosen.extra)


def _job_base(ledger: Ledger, settings: m.SlurmSettings | None) -> Path:
    if settings and settings.job_dir:
        return Path(settings.job_dir).expanduser()
    return ledger.path.with_name(ledger.path.name + ".jobs")


def _script(job_dir: Path) -> str:
    """The batch script: the node runs this interpreter on the job's folder (the login
    node's environment travels with sbatch, so PYTHONPATH and GPUOPT_* reach the node)."""
    command = shlex.join([sys.executable, "-m", "session.cluster.node", str(job_dir)])
    return f"#!/bin/sh\n# gpuopt: measured on the node, journaled to this folder\nexec {command}\n"


@dataclass(frozen=True)
class PreparedJob:
    """A job's folder, ready for the node: spec, seed and script written; its round (if
    any) numbered in the ledger and owned by the job."""

    uuid: str
    dir: Path
    kind: str
    session_id: str
    round: m.Round | None

    @property
    def script(self) -> Path:
        return self.dir / "job.sh"


def prepare_job(
    ledger: Ledger,
    session: m.Session,
    kind: str,
    options: dict[str, Any],
    *,
    settings: m.SlurmSettings | None = None,
    telemetry: bool = True,
) -> PreparedJob:
    """Write the job's folder; a round is numbered now, in the ledger, as the job's."""
    uuid = m.new_id()
    job_dir = _job_base(ledger, settings) / uuid
    job_dir.mkdir(parents=True, exist_ok=False)
    rnd = None
    if kind == "round":
        rnd = open_round(ledger, session, _placeholder(ledger, session, options))
        rnd.pid, rnd.host = None, "slurm"  # the job's now: never "stale" on this host
        rnd.summary = {**rnd.summary, "owner": {"host": "slurm", "job": uuid}}
        ledger.put(rnd)
    job = PreparedJob(uuid, job_dir, kind, session.id, rnd)
    try:
        ledger.backup(job_dir / SEED)  # VACUUM INTO: a consistent copy, never the file
        slim_seed(job_dir / SEED)
        spec = {"uuid": uuid, "kind": kind, "session_id": session.id, "options": options,
                "round_id": rnd.id if rnd else None, "telemetry": telemetry}  # fmt: skip
        (job_dir / JOB_SPEC).write_text(json.dumps(spec, indent=2))
        job.script.write_text(_script(job_dir))
        job.script.chmod(0o755)
    except BaseException as exc:
        _abandon(ledger, job, exc)
        raise
    return job


def _abandon(ledger: Ledger, job: PreparedJob, exc: BaseException) -> None:
    """A job that never reached Slurm: its round is closed as failed, never "running"."""
    if job.round is not None:
        job.round.status, job.round.ended_at = m.RoundStatus.FAILED, m.utcnow()
        job.round.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        ledger.put(job.round)


def submit_job(
    ledger: Ledger,
    session: m.Session,
    kind: str,
    options: dict[str, Any],
    sbatch: list[str],
    *,
    settings: m.SlurmSettings | None = None,
    telemetry: bool = True,
) -> SlurmJob:
    """Queue a baseline or a round of the session as one Slurm job."""
    why = slurm.available()
    if why:
        raise BadInput(f"--slurm: {why}")
    prepared = prepare_job(ledger, session, kind, options, settings=settings, telemetry=telemetry)
    name = f"--job-name=gpuopt-{kind}-{session.id[:8]}"
    try:
        job_id = slurm.submit(
            prepared.script, [name, f"--output={prepared.dir}/slurm-%j.out", *sbatch],
            cwd=prepared.dir,
        )  # fmt: skip
    except BaseException as exc:
        _abandon(ledger, prepared, exc)
        if isinstance(exc, slurm.SlurmError):
            raise WorkFailed(str(exc)) from None
        raise
    rnd = prepared.round
    job = SlurmJob(prepared.uuid, prepared.dir, job_id, kind, session.id, rnd.id if rnd else None)
    put_job(ledger, job.uuid, {**job.record(), "submitted": m.utcnow().isoformat()})
    if rnd is not None:
        rnd.summary = {**rnd.summary, "slurm": {"job_id": job_id, "job": job.uuid,
                                                "dir": str(job.dir)}}  # fmt: skip
        ledger.put(rnd)
    return job


def _placeholder(ledger: Ledger, session: m.Session, options: dict[str, Any]) -> m.Round:
    baseline = ledger.latest_baseline(session.id)
    assert baseline is not None  # the gate was passed before submitting
    known = {k: v for k, v in options.items() if k in ("min_blocks", "max_blocks", "threshold",
                                                          "budget_s", "seed")}  # fmt: skip
    if known.get("threshold") is None:
        known.pop("threshold", None)
    if known.get("seed") is None:
        known.pop("seed", None)
    return m.Round(session_id=session.id, baseline_id=baseline.id, **known)


def _progress_of(entry: dict[str, Any]) -> Progress:
    p = dict(entry)
    p["comparisons"] = [m.Comparison.model_validate(c) for c in p.get("comparisons") or []]
    return Progress(**p)


def follow_job(
    ledger: Ledger,
    job: SlurmJob,
    *,
    progress: ProgressFn = None,
    stop: threading.Event | None = None,
    on_state: Callable[[slurm.JobState], None] | None = None,
    on_telemetry: TelemetryFn | None = None,
) -> FollowResult:
    """Import the job's journal as it grows until the job is over, then close what it
    left open. `stop` (the person's Ctrl+C): the job is asked to stop after its current
    run (its batch process gets SIGTERM; a pending job is cancelled). `on_telemetry`: the
    node's samples to show and the job's state, as they come (job_telemetry's rule)."""
    result = FollowResult(job, None, None)
    if on_telemetry is not None:
        result.feed = JobFeed(job.job_id, on_telemetry)
    offset = imported_offset(ledger, job.uuid)
    asked_at = 0.0
    stopping = False
    try:
        while True:
            offset = _step(ledger, job, offset, progress, result, on_state)
            now = time.monotonic()
            if (now - asked_at >= STATE_EVERY_S or result.ended) and _ask_state(
                job, result, progress, on_state
            ):
                asked_at = now
                if result.state is None or not result.state.active:
                    _step(ledger, job, offset, progress, result, on_state)  # its last lines
                    break
            if stop is not None and stop.is_set() and not stopping:
                stopping = True
                _ask_to_stop(job, result.state)
            time.sleep(POLL_S)
    except KeyboardInterrupt:  # a second Ctrl+C: the job goes at once
        try:
            slurm.cancel(job.job_id)
        finally:
            _close(ledger, job, result, "it was cancelled from gpuopt")
        raise
    _close(ledger, job, result, None)
    return result


def _ask_state(
    job: SlurmJob,
    result: FollowResult,
    progress: ProgressFn,
    on_state: Callable[[slurm.JobState], None] | None,
) -> bool:
    """Ask Slurm for the job's state; False when it did not answer (said once, asked
    again at the next poll). A job Slurm no longer lists leaves `result.state` None."""
    try:
        state = slurm.job_state(job.job_id)
    except slurm.SlurmError as exc:
        if not result.notes or not result.notes[-1].startswith("Slurm did not answer"):
            result.notes.append(f"Slurm did not answer ({exc}); asking again")
            say(progress, Progress("job", result.notes[-1]))
        return False
    if result.notes and result.notes[-1].startswith("Slurm did not answer"):
        result.notes.pop()
    if state is not None and state.state == "PENDING" and result.started:
        return True  # its journal says it runs: Slurm's list lags behind it
    _seen(result, state, progress, on_state)
    return True


def _seen(
    result: FollowResult,
    state: slurm.JobState | None,
    progress: ProgressFn,
    on_state: Callable[[slurm.JobState], None] | None,
) -> None:
    """Take the job's state, and say it where its words changed."""
    last = result.state
    if state is None:
        result.state = None if last is None else _gone(last)
    else:
        result.state = state
    if state is not None and last is not None and state.words() == last.words():
        return
    if state is not None:
        say(progress, Progress("job", state.words()))
        if on_state is not None:
            on_state(state)
    if result.feed is not None and (state is not None or last is not None):
        result.feed.on_state(state if state is not None else last and _gone(last))


def _gone(last: slurm.JobState) -> slurm.JobState | None:
    """A job that left Slurm's list: its last state if that was final, else unknown."""
    return None if last.active else last


def _ask_to_stop(job: SlurmJob, state: slurm.JobState | None) -> None:
    if state is not None and state.state == "RUNNING":
        slurm.cancel(job.job_id, signal="TERM", batch_only=True)  # stops after its run
    else:
        slurm.cancel(job.job_id)


def _step(
    ledger: Ledger,
    job: SlurmJob,
    offset: int,
    progress: ProgressFn,
    result: FollowResult,
    on_state: Callable[[slurm.JobState], None] | None = None,
) -> int:
    """Import the journal's new whole lines and show its progress lines; the new offset."""
    entries = list(read_from(job.journal, offset))
    if not entries:
        return offset
    report = import_entries(ledger, job.uuid, entries)
    result.imported += report.added
    for entry, _ in entries:
        if entry.get("kind") == "start":
            _started(job, entry, result, progress, on_state)
        if result.feed is not None:
            result.feed.on_entry(entry)
        kind = entry.get("kind")
        if kind == "row":
            ids = result.records.setdefault(str(entry.get("model")), [])
            rid = (entry.get("data") or {}).get("id")
            if rid and rid not in ids:
                ids.append(rid)
        elif kind == "progress" and progress is not None:
            try:
                progress(_progress_of(entry["progress"]))
            except (TypeError, ValueError):
                pass  # a progress line this version cannot show: the rows still count
        elif kind == "end":
            result.ended, result.error = entry.get("status"), entry.get("error") or ""
    return report.offset


def _started(
    job: SlurmJob,
    entry: dict[str, Any],
    result: FollowResult,
    progress: ProgressFn,
    on_state: Callable[[slurm.JobState], None] | None,
) -> None:
    """The job wrote that it started: it is RUNNING on its node now, whenever Slurm is
    next asked (a short job may be over by then, and its running never said)."""
    result.started = True
    if result.state is not None and not (result.state.active and result.state.state != "RUNNING"):
        return  # already RUNNING, or over: Slurm's word stands
    node = str((entry.get("place") or {}).get("node") or "")
    _seen(result, slurm.JobState(job.job_id, "RUNNING", node=node), progress, on_state)


def import_journal(ledger: Ledger, job: SlurmJob, progress: ProgressFn = None) -> FollowResult:
    """Import what the job's journal holds now (each line once), without asking Slurm."""
    result = FollowResult(job, None, None)
    _step(ledger, job, imported_offset(ledger, job.uuid), progress, result)
    return result


def close_left_open(ledger: Ledger, job: SlurmJob, result: FollowResult, why: str | None) -> None:
    """Once the job is over: a round it did not close is closed as interrupted, with its
    finished runs; the job's copy of the ledger is deleted (its journal is kept)."""
    _close(ledger, job, result, why)


def _close(ledger: Ledger, job: SlurmJob, result: FollowResult, why: str | None) -> None:
    state = result.state.state if result.state else "gone from Slurm's list"
    put_job(ledger, job.uuid, {"state": state, "ended": result.ended})
    (job.dir / SEED).unlink(missing_ok=True)
    if job.round_id is None:
        return
    rnd = ledger.get(m.Round, job.round_id)
    if rnd is None:
        return
    if rnd.status is m.RoundStatus.RUNNING and result.ended == "failed" and result.error:
        rnd.status, rnd.ended_at, rnd.error = m.RoundStatus.FAILED, m.utcnow(), result.error
        notes = [
            *rnd.summary.get("notes", []),
            f"the Slurm job {job.job_id} failed: {result.error}",
        ]
        rnd.summary = {**rnd.summary, "stop_reason": "error", "notes": notes}
        ledger.put(rnd)
        result.closed_here = True
    if rnd.status is m.RoundStatus.RUNNING:
        started = queries.round_has_runs(ledger, rnd.id)
        because = why or (
            f"the Slurm job {job.job_id} ended {state} before it closed the round"
            if started or result.ended
            else f"the Slurm job {job.job_id} ended {state} before it started"
        )
        rnd.status, rnd.ended_at = m.RoundStatus.INTERRUPTED, m.utcnow()
        notes = [*rnd.summary.get("notes", []), f"{because}; the runs it finished are kept"]
        rnd.summary = {**rnd.summary, "stop_reason": "interrupted", "notes": notes}
        ledger.put(rnd)
        result.closed_here = True
        result.notes.append(because)
    result.round = rnd


def list_jobs(ledger: Ledger, *, live: bool = True) -> list[dict[str, Any]]:
    """The jobs this ledger submitted, newest last, with Slurm's state now (`live`)."""
    out = []
    for rec in jobs(ledger):
        if live and rec.get("job_id"):
            try:
                state = slurm.job_state(str(rec["job_id"]))
            except slurm.SlurmError:
                state = None
            rec["now"] = (
                state.words()
                if state
                else f"Slurm job {rec['job_id']} {rec.get('state') or 'over'} (no longer in "
                "Slurm's list)"
            )
            rec["active"] = bool(state and state.active)
        out.append(rec)
    return out


def find_job(ledger: Ledger, ref: str) -> SlurmJob:
    """A job by its gpuopt id (or a prefix), its Slurm job id, or its round's id."""
    found = [
        r for r in jobs(ledger)
        if r["uuid"].startswith(ref) or str(r.get("job_id")) == ref
        or (r.get("round_id") or "").startswith(ref)
    ]  # fmt: skip
    if not found:
        raise BadInput(f"no Slurm job {ref!r} in this ledger (gpuopt job list shows them)")
    if len(found) > 1:
        raise BadInput(f"{ref!r} matches {len(found)} jobs: give more of its id")
    r = found[0]
    return SlurmJob(r["uuid"], Path(r["dir"]), str(r["job_id"]), r["kind"], r["session_id"],
                    r.get("round_id"))  # fmt: skip


def cancel_job(ledger: Ledger, job: SlurmJob) -> FollowResult:
    """scancel the job, then import what it wrote and close what it left open."""
    try:
        slurm.cancel(job.job_id)
    except slurm.SlurmError as exc:
        raise WorkFailed(str(exc)) from None
    return follow_job(ledger, job)


def round_where_contracted(
    ledger: Ledger, session: m.Session, *, monitor: Any = None, **options: Any
) -> m.Round:
    """A round here, or as a Slurm job when the contract keeps Slurm settings (what the
    app calls: its progress and stop work the same either way)."""
    if session.contract.slurm is None:
        options.pop("on_telemetry", None)  # the local sampler feeds the panel itself
        return conduct.run_round(ledger, session, monitor=monitor, **options)
    result = _as_contracted_job(ledger, session, "round", options)
    if result.round is None:
        raise WorkFailed(f"the Slurm job {result.job.job_id} left no round: {result.error}")
    return result.round


def baseline_where_contracted(
    ledger: Ledger, session: m.Session, *, monitor: Any = None, **options: Any
) -> m.Baseline:
    """A baseline here, or as a Slurm job when the contract keeps Slurm settings."""
    if session.contract.slurm is None:
        options.pop("on_telemetry", None)  # the local sampler feeds the panel itself
        return conduct.record_baseline(ledger, session, monitor=monitor, **options)
    result = _as_contracted_job(ledger, session, "baseline", options)
    found = result.last("Baseline")
    baseline = ledger.get(m.Baseline, found) if found else None
    if baseline is None:
        raise WorkFailed(f"the Slurm job {result.job.job_id} recorded no baseline: {result.error}")
    return baseline


def _as_contracted_job(
    ledger: Ledger, session: m.Session, kind: str, options: dict[str, Any]
) -> FollowResult:
    progress, stop = options.pop("progress", None), options.pop("stop", None)
    on_telemetry = options.pop("on_telemetry", None)
    settings = session.contract.slurm
    job = submit_job(ledger, session, kind, options, job_options(settings), settings=settings)
    return follow_job(ledger, job, progress=progress, stop=stop, on_telemetry=on_telemetry)


def catch_up(ledger: Ledger, session: m.Session) -> list[FollowResult]:
    """Before a new baseline or round of the session: the jobs of it that are over but
    were never followed to their end (the login side was lost) are imported now and what
    they left open is closed, so no finished work is taken for a stale round. A job
    still queued or running is left to its follower (the round gate names it)."""
    done = []
    for rec in jobs(ledger):
        if rec.get("session_id") != session.id or rec.get("ended") or rec.get("state"):
            continue
        try:
            state = slurm.job_state(str(rec["job_id"]))
        except slurm.SlurmError:
            continue  # no Slurm here now: nothing can be said of it
        if state is not None and state.active:
            continue
        job = find_job(ledger, rec["uuid"])
        result = import_journal(ledger, job)
        result.state = state
        _close(ledger, job, result, None)
        done.append(result)
    return done
