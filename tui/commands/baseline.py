"""`gpuopt baseline`: pin the code to a snapshot, run every workload, judge reproducibility."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.table import Table
from rich.text import Text

from session import models as m
from session.api import (
    DRIFT_WARNING,
    BadInput,
    ConductError,
    GateRefused,
    Outcome,
    Session,
    WorkFailed,
    check_workloads,
    metric_texts,
    outcome_words,
    record_baseline,
    repair_words,
    stored_outcome,
)
from session.api import BadInput as UsageError
from session.api import outcome as outcome_of
from session.read_model import values_per_workload
from tui.commands.common import open_ledger, print_json, session_of
from tui.commands.run_opts import (
    budget_of,
    engine_monitor,
    interruptible,
    progress_display,
    threshold_of,
)
from tui.commands.slurm_opts import catch_up, run_as_job, slurm_given
from tui.display import LONG_LIMIT, plain, shown
from tui.display import console as make_console


def run(args: argparse.Namespace) -> int:
    args.threshold = threshold_of(args)
    if args.runs < 2:
        raise UsageError("--runs must be at least 2")
    if args.warmup < 0:
        raise UsageError("--warmup cannot be negative")
    if args.max_runs is not None and args.max_runs < args.runs:
        raise UsageError(f"--max-runs {args.max_runs} is below --runs {args.runs}")
    args.budget = budget_of(args)
    with open_ledger(args) as ledger:
        session = session_of(ledger, args.session)
        catch_up(ledger, session)  # finished Slurm jobs no one followed to their end
        try:  # refuse before any telemetry starts
            check_workloads(session)
        except BadInput as exc:
            raise UsageError(str(exc)) from None
        if slurm_given(args):  # one job on one node, followed from here
            return baseline_job(args, ledger, session)
        with (
            engine_monitor(
                ledger, session.id, not args.no_telemetry, session.contract.gpu
            ) as monitor,
            interruptible() as stop,
            progress_display("baseline") as show,
        ):
            try:
                baseline = record_baseline(
                    ledger,
                    session,
                    runs=args.runs,
                    max_runs=args.max_runs,
                    threshold=args.threshold,
                    budget_s=args.budget,
                    warmup=args.warmup,
                    progress=show,
                    stop=stop,
                    monitor=monitor,
                )
            except (GateRefused, BadInput) as exc:
                raise UsageError(str(exc)) from None
            except ConductError as exc:
                raise WorkFailed(str(exc)) from None
        counts = values_per_workload(ledger, baseline.id)
        outcome = outcome_of(ledger, session, baseline, args.threshold)
    interrupted = stop.is_set()
    if args.json:
        print_json({**baseline.model_dump(mode="json"),
                    "outcome": None if outcome is None else outcome.value})  # fmt: skip
    else:
        print_baseline(baseline, session, counts, outcome, args.threshold)
    if interrupted:
        print("gpuopt: interrupted: the baseline was not judged", file=sys.stderr)
        return 130
    return 1 if outcome is None or outcome.blocks_round else 0


def print_baseline(
    b: m.Baseline,
    s: m.Session,
    counts: dict[str, int] | None = None,
    outcome: Outcome | None = None,
    threshold: float | None = None,
) -> None:
    console = make_console(highlight=False, soft_wrap=True)

    delta = s.contract.threshold if threshold is None else threshold
    if not isinstance(outcome, Outcome):
        outcome = stored_outcome(b)
        delta = delta if b.threshold is None else b.threshold
    style = "green" if outcome is Outcome.REPRODUCIBLE else "red"
    verdict = (
        outcome_words(outcome, delta),
        "yellow" if outcome is None or outcome.warns else style,
    )
    # stored text (ids, names, warnings) goes out as Text: never markup, controls visible
    console.print(Text.assemble("Baseline ID  ", shown(b.id, style="bold")))
    console.print(
        Text.assemble(
            f"snapshot     {plain(b.snapshot.commit[:12])} ({plain(b.snapshot.ref)})",
            (" with uncommitted changes" if b.snapshot.dirty else "", "dim"),
        )
    )
    console.print(Text.assemble("verdict      ", verdict))
    if b.reproducibility_detail:
        console.print(
            Text.assemble("             ", shown(b.reproducibility_detail, 2000, style="dim")),
            soft_wrap=True,
        )
    for w in b.snapshot.warnings:
        console.print(
            Text.assemble(("warning", "yellow"), "      ", shown(w, 2000)), soft_wrap=True
        )
    figures = metric_texts(s.contract)  # a torch workload's is ms per call, not the contract's
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("workload")
    table.add_column("reference", justify="right")
    table.add_column("runs", justify="right")
    table.add_column("figure")
    for wl in s.contract.workloads:
        ref = b.reference.get(wl.name)
        want = b.runs_per_workload
        got = want if counts is None else counts.get(wl.name, 0)
        runs = str(got) if got == want or (got == 0 and ref is None) else f"{got} of {want}"
        table.add_row(shown(wl.name), "—" if ref is None else f"{ref:.6g}", runs,
                      shown(figures.get(wl.name, "")))  # fmt: skip
    console.print(table)
    console.print("reset / restore procedure:")
    for line in plain(b.reset_procedure, LONG_LIMIT, multiline=True).splitlines():
        console.print(Text(f"  {line}"), soft_wrap=True)
    if outcome is Outcome.TOO_FEW:
        console.print(
            "[yellow]Too few runs to judge: a round may go on, but record the baseline with "
            "the runs named above to learn its noise.[/]"
        )
    elif outcome is Outcome.DRIFTING:
        console.print(Text(DRIFT_WARNING, style="yellow"))
    elif isinstance(outcome, Outcome) and outcome.warns:
        console.print(
            "[yellow]Too noisy for this band: a round may go on at a band this noise "
            "supports (gpuopt round --threshold F, recorded with the round), or quiet the "
            "machine and record the baseline again.[/]"
        )
    elif isinstance(outcome, Outcome) and outcome.blocks_round:
        words = repair_words(outcome)
        # Text, not markup, like every line here that could ever carry stored text
        line = f"{words[0].upper()}{words[1:]} before comparing variants."
        console.print(Text(plain(line, LONG_LIMIT), style="red"))


def baseline_job(args: argparse.Namespace, ledger: Any, session: Any) -> int:
    """`gpuopt baseline --slurm`: the baseline as a job; its summary as a local one's."""
    options = {"runs": args.runs, "max_runs": args.max_runs, "threshold": args.threshold,
               "budget_s": args.budget, "warmup": args.warmup}  # fmt: skip
    with progress_display("baseline") as show:
        result = run_as_job(args, ledger, session, "baseline", options, show)
    found = result.last("Baseline")
    baseline = Session(ledger, session.id).baseline(found) if found else None
    if baseline is None:
        raise WorkFailed(
            f"the Slurm job {result.job.job_id} recorded no baseline"
            + (f": {result.error}" if result.error else "")
        )
    if result.error:
        print(f"gpuopt: the job failed: {plain(result.error, 2000)}", file=sys.stderr)
    counts = values_per_workload(ledger, baseline.id)
    outcome = outcome_of(ledger, session, baseline, args.threshold)
    if args.json:
        print_json({**baseline.model_dump(mode="json"),
                    "outcome": None if outcome is None else outcome.value})  # fmt: skip
    else:
        print_baseline(baseline, session, counts, outcome, args.threshold)
    if result.ended == "interrupted":
        print("gpuopt: interrupted: the baseline was not judged", file=sys.stderr)
        return 130
    return 1 if outcome is None or outcome.blocks_round else 0
