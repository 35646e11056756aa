"""`gpuopt job list|follow|cancel`: the Slurm jobs this ledger submitted."""

from __future__ import annotations

import argparse
import sys

from session.api import FollowResult, cancel_job, find_job, follow_job, list_jobs
from tui.commands.common import open_ledger, print_json
from tui.commands.run_opts import interruptible, progress_display
from tui.display import plain


def list_cmd(args: argparse.Namespace) -> int:
    with open_ledger(args, readonly=True) as ledger:
        found = list_jobs(ledger)
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


def _finish(result: FollowResult) -> int:
    state, rnd = result.state, result.round
    said = state.words() if state else "Slurm no longer lists the job"
    tail = f"; round {rnd.number}: {rnd.status.value}" if rnd is not None else ""
    print(plain(f"{said}; {result.imported} record(s) imported{tail}", 1000))
    for note in result.notes:
        print(f"gpuopt: {plain(note, 1000)}", file=sys.stderr)
    return 130 if rnd is not None and rnd.status.value == "interrupted" else 0


def follow_cmd(args: argparse.Namespace) -> int:
    with open_ledger(args) as ledger:
        job = find_job(ledger, args.job)
        with progress_display(job.kind) as show, interruptible() as stop:
            result = follow_job(ledger, job, progress=show, stop=stop)
        return _finish(result)


def cancel_cmd(args: argparse.Namespace) -> int:
    with open_ledger(args) as ledger:
        job = find_job(ledger, args.job)
        return _finish(cancel_job(ledger, job))
