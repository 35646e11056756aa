"""`gpuopt bisect --good REF --bad REF [-- COMMAND]`: the commit that moved the metric,
found with interleaved paired rounds; `--resume ID` goes on after Ctrl+C or a hang-up,
`--show [ID]` prints a stored one (and `--export-markdown FILE` writes its record)."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.text import Text

from session import models as m
from session.api import (
    BadInput,
    SlurmSteps,
    answer_lines,
    bisect_plan,
    bisect_resume,
    bisect_start,
    bisection,
    bisection_markdown,
    bisections,
    cost_line,
    culprit_diff_stats,
    find_session,
    job_options,
    make_monitor,
    spec_of_command,
    spec_of_session,
    summary_line,
)
from session.api import BadInput as UsageError
from tui.commands.common import open_ledger, session_of
from tui.commands.parsers.bisect import DEFAULT_THRESHOLD
from tui.commands.run_opts import interruptible, threshold_of
from tui.commands.slurm_opts import slurm_given
from tui.display import console, plain
from tui.widgets.bisections import commit_line


def run(args: argparse.Namespace) -> int:
    if args.show is not None:
        return _show(args)
    with open_ledger(args) as ledger:
        with interruptible() as stop:
            if args.resume:
                if args.good or args.bad or args.command:
                    raise UsageError("--resume takes no --good, --bad or command")
                found = bisection(ledger, args.resume)
                say(f"resuming bisection {found.id}")
                stepper = slurm_steps(args, ledger, stop, found.slurm)
                with telemetry(not args.no_telemetry and stepper is None) as monitor:
                    rec = bisect_resume(
                        ledger, args.resume, progress=say, stop=stop, live=live(), monitor=monitor,
                        stepper=stepper,
                    )  # fmt: skip
            else:
                rec = _start(args, ledger, stop)
        _finish(args, rec)
    return 130 if stop.is_set() and rec.status.value != "completed" else 0


@contextmanager
def telemetry(enabled: bool) -> Iterator[Any]:
    """A monitor that judges each run's trust from GPU telemetry (its samples are not
    kept: a bisection stores its values, not a session's telemetry); None when off."""
    if not enabled:
        yield None
        return

    monitor = make_monitor(None, None)
    try:
        status = str(getattr(monitor, "status", "ok"))
        if status != "ok":  # said once: runs are judged "unknown", never "clean"
            print(f"gpuopt: no GPU telemetry ({status}); trust unknown", file=sys.stderr)
        yield monitor
    finally:
        monitor.close()


def _start(args: argparse.Namespace, ledger: Any, stop: Any) -> Any:
    if not args.good or not args.bad:
        raise UsageError("give --good REF and --bad REF (or --resume ID)")
    threshold = threshold_of(args)
    session = None
    if args.session:
        if args.command:
            raise UsageError("give a session or a command after --, not both")
        given = [f"--{n}" for n in ("setup", "check", "prepare", "metric") if getattr(args, n)]
        if given or args.higher_is_better:
            given += ["--higher-is-better"] if args.higher_is_better else []
            raise UsageError(f"{', '.join(given)}: the session's contract says these")
        session = session_of(ledger, args.session)
        spec = spec_of_session(session, args.workload)
    elif args.command:
        command = args.command[0] if len(args.command) == 1 else shlex.join(args.command)
        try:
            metric = m.Metric.parse(
                args.metric or "wall", direction="higher" if args.higher_is_better else None
            )
        except ValueError as exc:
            raise UsageError(f"--metric: {exc}") from None
        spec = spec_of_command(
            command, metric, setup=args.setup, check=args.check, prepare=args.prepare
        )
    else:
        raise UsageError("give --session SESSION or the command to time after --")
    if threshold is None:
        threshold = session.contract.threshold if session else float(DEFAULT_THRESHOLD)
    repo = args.repo or (session.repo if session else ".")
    try:
        rec = bisect_plan(
            repo,
            args.good,
            args.bad,
            spec,
            threshold=threshold,
            min_blocks=args.min_blocks,
            max_blocks=args.max_blocks,
            session_id=session.id if session else None,
        )
    except BadInput as exc:
        raise UsageError(str(exc)) from None
    stepper = slurm_steps(args, ledger, stop, None)
    if stepper is not None:
        rec.slurm = stepper.sbatch
    # Once what was asked can be done; with --slurm, telemetry is the node's.
    with telemetry(not args.no_telemetry and stepper is None) as monitor:
        say(f"bisecting {args.good}..{args.bad} in {repo} at ±{threshold * 100:.3g}%")
        return bisect_start(
            ledger, rec, progress=say, stop=stop, live=live(), monitor=monitor, stepper=stepper
        )


def slurm_steps(args: argparse.Namespace, ledger: Any, stop: Any, stored: Any) -> Any:
    """--slurm (or a bisection stored as one): each step a Slurm job; else None. The
    sbatch options: those given now, else those stored, else the session's contract's."""
    if not slurm_given(args) and stored is None:
        return None

    settings = None
    if args.session:
        settings = find_session(ledger, args.session).contract.slurm
    given = job_options(
        settings, partition=args.partition, gres=args.gres, time=args.time, account=args.account
    ) + list(args.sbatch_arg)
    sbatch = given if args.slurm or stored is None else list(stored)
    base = None
    if isinstance(settings, m.SlurmSettings) and settings.job_dir:
        base = Path(settings.job_dir).expanduser()
    return SlurmSteps(
        ledger, sbatch, job_base=base, telemetry=not args.no_telemetry, say=say, stop=stop
    )


def live() -> Any:
    """A status line on stderr, rewritten per block, on a terminal only (a log stays clean)."""
    if not sys.stderr.isatty():
        return None

    def show(line: str) -> None:
        print(f"\r\x1b[K{plain(line, 200)}", end="", file=sys.stderr, flush=True)

    return show


def say(line: str) -> None:
    if sys.stderr.isatty():
        print("\r\x1b[K", end="", file=sys.stderr, flush=True)  # the status line goes

    console(highlight=False, soft_wrap=True).print(Text(plain(line, 4000)))


def _finish(args: argparse.Namespace, rec: Any) -> None:
    say(f"bisection {rec.id}: {rec.status.value}")
    for line in answer_lines(rec):
        say(line)
    say(cost_line(rec))
    _line(rec)
    if args.export_markdown:
        _export(args.export_markdown, rec)


def _line(rec: Any) -> None:
    console(highlight=False, soft_wrap=True).print(commit_line(rec))


def _export(path: str, rec: Any) -> None:
    Path(path).write_text(bisection_markdown(rec, culprit_diff_stats(rec)), encoding="utf-8")
    print(f"record written to {path}", file=sys.stderr)


def _show(args: argparse.Namespace) -> int:
    with open_ledger(args, readonly=True) as ledger:
        if not args.show:
            found = bisections(ledger)
            if not found:
                say("no bisections in this ledger")
            for rec in found:
                say(f"{rec.id[:12]} {rec.status.value:<11} {summary_line(rec)}")
            return 0
        rec = bisection(ledger, args.show)
    _finish(args, rec)
    return 0
