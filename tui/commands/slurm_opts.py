"""`--slurm` for `gpuopt baseline` and `gpuopt round`: the options, and running one as a
Slurm job followed from here (session.cluster.jobs does the work)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from session.api import BadInput as UsageError
from session.api import catch_up as catch_up_jobs
from session.api import follow_job, job_options, submit_job
from tui.commands.run_opts import interruptible
from tui.display import plain


def catch_up(ledger: Any, session: Any) -> None:
    """Import the session's Slurm jobs that ended unfollowed (said on stderr)."""
    for result in catch_up_jobs(ledger, session):
        print(
            f"gpuopt: imported {result.imported} record(s) of Slurm job {result.job.job_id}, "
            "which ended while no gpuopt followed it"
            + (f" ({plain(result.notes[0], 500)})" if result.notes else ""),
            file=sys.stderr,
        )


def slurm_given(args: argparse.Namespace) -> bool:
    """--slurm given, or a Slurm option that only makes sense with it (refused then)."""
    extra = [o for o in ("partition", "gres", "time", "account") if getattr(args, o, None)]
    if (extra or args.sbatch_arg) and not args.slurm:
        named = ", ".join(f"--{o}" for o in extra) or "--sbatch-arg"
        raise UsageError(f"{named}: only with --slurm")
    return bool(args.slurm)


def run_as_job(
    args: argparse.Namespace,
    ledger: Any,
    session: Any,
    kind: str,
    options: dict[str, Any],
    show: Any,
) -> Any:
    """Submit the baseline or round, follow it to its end; the follow's result."""
    settings = session.contract.slurm
    sbatch = job_options(
        settings, partition=args.partition, gres=args.gres, time=args.time, account=args.account
    ) + list(args.sbatch_arg)
    job = submit_job(
        ledger, session, kind, options, sbatch, settings=settings,
        telemetry=not args.no_telemetry,
    )  # fmt: skip
    print(
        f"gpuopt: {kind} submitted as Slurm job {job.job_id} (gpuopt job {job.uuid[:8]}; "
        f"folder {plain(str(job.dir))}); Ctrl+C stops it after its current run, "
        f"`gpuopt job follow {job.uuid[:8]}` follows it again from another shell",
        file=sys.stderr,
        flush=True,
    )
    with interruptible() as stop:
        result = follow_job(ledger, job, progress=show, stop=stop)
    for note in result.notes:
        print(f"gpuopt: {plain(note, 1000)}", file=sys.stderr)
    return result
