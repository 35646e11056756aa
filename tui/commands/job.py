"""`gpuopt job list|follow|cancel`: the Slurm jobs this ledger submitted."""

from __future__ import annotations

import argparse
import sys

from tui.commands.common import open_ledger, print_json

# At the head only what costs `gpuopt CMD --help` no module of weight (the standard
# library, tui.commands.common); pydantic, rich and the engine are imported inside the
# handlers, so help never pays for them (tests/cli/test_cli_imports.py).


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "job",
        help="the Slurm jobs of --slurm baselines and rounds: list, follow again, cancel",
        description="A baseline or round run with --slurm is one Slurm job whose journal is "
        "imported into the ledger as it grows. If the gpuopt that followed it was stopped or "
        "lost, `follow` imports the rest (each record once) and closes what the job left open.",
    )
    jsub = p.add_subparsers(dest="job_command", metavar="ACTION", required=True)
    ls = jsub.add_parser("list", help="the jobs, with Slurm's state now")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(handler=list_cmd)
    for name, handler, text in (
        ("follow", follow_cmd, "import the job's journal until it ends, showing its progress"),
        ("cancel", cancel_cmd, "scancel the job (queued or running) and close its round"),
    ):
        c = jsub.add_parser(name, help=text)
        c.add_argument(
            "job", metavar="JOB", help="gpuopt job id (or prefix), Slurm job id, or round id"
        )
        c.set_defaults(handler=handler)


def list_cmd(args: argparse.Namespace) -> int:
    from session.cluster import jobs
    from tui.display import plain

    with open_ledger(args, readonly=True) as ledger:
        found = jobs.list_jobs(ledger)
    if args.json:
        print_json(found)
        return 0
    if not found:
        print("no Slurm jobs in this ledger")
    for rec in found:
        what = f"round {rec['round_id'][:8]}" if rec.get("round_id") else rec.get("kind", "?")
        print(
            f"{rec['uuid'][:8]}  job {plain(str(rec.get('job_id')))}  {plain(what)}  "
            f"session {plain(rec.get('session_id', '')[:8])}  {plain(rec.get('now', ''))}"
        )
    return 0


def _finish(result: object) -> int:
    from tui.display import plain

    state = getattr(result, "state", None)
    rnd = getattr(result, "round", None)
    said = state.words() if state else "Slurm no longer lists the job"
    tail = f"; round {rnd.number}: {rnd.status.value}" if rnd is not None else ""
    print(plain(f"{said}; {getattr(result, 'imported', 0)} record(s) imported{tail}", 1000))
    for note in getattr(result, "notes", []):
        print(f"gpuopt: {plain(note, 1000)}", file=sys.stderr)
    return 130 if rnd is not None and rnd.status.value == "interrupted" else 0


def follow_cmd(args: argparse.Namespace) -> int:
    from session.cluster import jobs
    from tui.commands.run_opts import interruptible, progress_display

    with open_ledger(args) as ledger:
        job = jobs.find_job(ledger, args.job)
        with progress_display(job.kind) as show, interruptible() as stop:
            result = jobs.follow_job(ledger, job, progress=show, stop=stop)
        return _finish(result)


def cancel_cmd(args: argparse.Namespace) -> int:
    from session.cluster import jobs

    with open_ledger(args) as ledger:
        job = jobs.find_job(ledger, args.job)
        return _finish(jobs.cancel_job(ledger, job))
