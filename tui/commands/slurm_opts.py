"""`--slurm` for `gpuopt baseline` and `gpuopt round`: the options, and running one as a
Slurm job followed from here (session.cluster.jobs does the work)."""

from __future__ import annotations

import argparse
from typing import Any

from session.errors import BadInput as UsageError
from session.errors import WorkFailed

# Lazy imports, on purpose: `gpuopt --help` imports this module, and must not pay for
# textual, pydantic or the engine (tests/cli/test_cli_imports.py). Each handler imports
# what it uses.


def add_slurm_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "Slurm",
        "run it as one Slurm job on one node; the ledger stays here and the job's journal is "
        "imported as it grows (the contract's slurm settings are the defaults)",
    )
    g.add_argument("--slurm", action="store_true", help="submit it with sbatch and follow it")
    g.add_argument("--partition", metavar="P", help="sbatch --partition")
    g.add_argument("--gres", metavar="G", help="sbatch --gres, e.g. gpu:1")
    g.add_argument("--time", metavar="T", help="sbatch --time, e.g. 1:00:00")
    g.add_argument("--account", metavar="A", help="sbatch --account")
    g.add_argument(
        "--sbatch-arg",
        action="append",
        default=[],
        metavar="OPT",
        help="one more sbatch option, as sbatch takes it (repeatable), e.g. --sbatch-arg=--hold",
    )


def catch_up(ledger: Any, session: Any) -> None:
    """Import the session's Slurm jobs that ended unfollowed (said on stderr)."""
    import sys

    from session.cluster import jobs
    from tui.display import plain

    for result in jobs.catch_up(ledger, session):
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
    import sys

    from session.cluster import jobs
    from tui.commands.round_cmd import interruptible
    from tui.display import plain

    settings = session.contract.slurm
    sbatch = jobs.job_options(
        settings, partition=args.partition, gres=args.gres, time=args.time, account=args.account
    ) + list(args.sbatch_arg)
    job = jobs.submit_job(
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
        result = jobs.follow_job(ledger, job, progress=show, stop=stop)
    for note in result.notes:
        print(f"gpuopt: {plain(note, 1000)}", file=sys.stderr)
    return result


def round_job(
    args: argparse.Namespace, ledger: Any, session: Any, names: dict[str, str], variants: Any
) -> int:
    """`gpuopt round --slurm`: the round as a job; its table as a local round's."""
    import sys

    from session import models as m
    from tui.commands.round_cmd import progress_display, report_round
    from tui.display import plain

    slurm_given(args)
    options = {"variants": variants, "min_blocks": args.min_blocks, "max_blocks": args.max_blocks,
               "threshold": args.threshold, "budget_s": args.budget, "seed": args.seed}  # fmt: skip
    with progress_display("round", names) as show:
        result = run_as_job(args, ledger, session, "round", options, show)
    rnd = result.round
    if rnd is None:
        raise WorkFailed(f"the Slurm job {result.job.job_id} left no round: {result.error}")
    if result.error:
        print(f"gpuopt: the job failed: {plain(result.error, 2000)}", file=sys.stderr)
    comparisons = ledger.list(m.Comparison, round_id=rnd.id)
    corrects = ledger.list(m.CorrectnessResult, session_id=session.id)
    job = {**result.job.record(), "state": result.state.state if result.state else None}
    return report_round(args, rnd, comparisons, corrects, names, session, {"job": job})


def baseline_job(args: argparse.Namespace, ledger: Any, session: Any) -> int:
    """`gpuopt baseline --slurm`: the baseline as a job; its summary as a local one's."""
    import sys

    from session import conduct
    from session import models as m
    from session.read_model import values_per_workload
    from tui.commands.baseline import print_baseline
    from tui.commands.common import print_json
    from tui.commands.round_cmd import progress_display
    from tui.display import plain

    options = {"runs": args.runs, "max_runs": args.max_runs, "threshold": args.threshold,
               "budget_s": args.budget, "warmup": args.warmup}  # fmt: skip
    with progress_display("baseline") as show:
        result = run_as_job(args, ledger, session, "baseline", options, show)
    found = result.last("Baseline")
    baseline = ledger.get(m.Baseline, found) if found else None
    if baseline is None:
        raise WorkFailed(
            f"the Slurm job {result.job.job_id} recorded no baseline"
            + (f": {result.error}" if result.error else "")
        )
    if result.error:
        print(f"gpuopt: the job failed: {plain(result.error, 2000)}", file=sys.stderr)
    counts = values_per_workload(ledger, baseline.id)
    outcome = conduct.outcome(ledger, session, baseline, args.threshold)
    if args.json:
        print_json({**baseline.model_dump(mode="json"),
                    "outcome": None if outcome is None else outcome.value})  # fmt: skip
    else:
        print_baseline(baseline, session, counts, outcome, args.threshold)
    if result.ended == "interrupted":
        print("gpuopt: interrupted: the baseline was not judged", file=sys.stderr)
        return 130
    return 1 if outcome is None or outcome.blocks_round else 0
