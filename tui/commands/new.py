"""`gpuopt new`: start a session with its correctness contract."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from session.errors import BadInput as UsageError
from tui.commands.common import ledger_path, open_ledger
from tui.commands.numbers import number, within
from tui.commands.run_opts import add_threshold, threshold_of

# At the head only what costs `gpuopt CMD --help` no module of weight (the standard
# library, tui.commands.common); pydantic, rich and the engine are imported inside the
# handlers, so help never pays for them (tests/cli/test_cli_imports.py).


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "new",
        help="start a session: repository, workloads, metric and correctness check",
        description="Start a session. Prints only the new session's id on stdout.",
    )
    p.add_argument("--repo", required=True, metavar="DIR", help="the git repository to optimize")
    p.add_argument("--title", required=True, metavar="TEXT", help="what this session is about")
    p.add_argument(
        "--workload",
        action="append",
        required=True,
        metavar="NAME=COMMAND",
        help="a workload: a shell command, torch:MODULE:CALLABLE or kernelbench:PATH (repeat)",
    )
    p.add_argument(
        "--metric",
        default="wall",
        metavar="wall|regex:PATTERN|json:KEY",
        help="wall time of the process (default), a regex with a named group `value`, "
        "or a key of a JSON line the workload prints",
    )
    p.add_argument("--unit", metavar="UNIT", help="unit of the metric (default s for wall)")
    p.add_argument("--direction", choices=("lower", "higher"), help="which way is better")
    p.add_argument("--check", metavar="COMMAND", help="correctness command: exit 0 passes")
    p.add_argument("--setup", metavar="CMD", help="run once per round, before")
    p.add_argument("--prepare", metavar="CMD", help="run before every run (reset/restore)")
    p.add_argument("--cleanup", metavar="CMD", help="run once per round, after")
    p.add_argument(
        "--timeout",
        type=number("timeout"),
        metavar="SECONDS",
        help=f"per-run limit (default 600; {within('timeout')})",
    )
    p.add_argument(
        "--launcher", metavar="PREFIX", help="prefix every run, e.g. 'srun -N1 --gpus=1'"
    )
    p.add_argument("--python", metavar="PATH", help="interpreter for torch workloads")
    p.add_argument(
        "--gpu",
        metavar="UUID|INDEX",
        help="the GPU to measure on (CUDA_VISIBLE_DEVICES for the workloads; telemetry "
        "watches it alone); kept in the contract",
    )
    for name, example in (("partition", "gpu"), ("gres", "gpu:1"), ("time", "1:00:00"),
                          ("account", "proj42")):  # fmt: skip
        p.add_argument(
            f"--slurm-{name}",
            metavar=name.upper(),
            help=f"default sbatch --{name} of --slurm baselines and rounds, e.g. {example}",
        )
    p.add_argument(
        "--slurm-job-dir",
        metavar="DIR",
        help="where --slurm jobs keep their folders: storage the compute nodes see "
        "(default: beside the ledger)",
    )
    add_threshold(p, "noise band of baselines and verdicts, kept in the contract", "0.02")
    p.add_argument(
        "--isolated",
        action="append",
        default=[],
        metavar="NAME",
        help="mark a workload as an isolated benchmark (others are end-to-end)",
    )
    p.add_argument(
        "--training", action="append", default=[], metavar="NAME", help="mark a training path"
    )
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=KEY=VALUE",
        help="set environment variable KEY=VALUE on workload NAME (repeat), e.g. "
        "MALLOC_TRIM_THRESHOLD_ for a CPU torch workload",
    )
    p.set_defaults(handler=run)


def build_session(args: argparse.Namespace) -> object:
    """The Session the arguments describe; raises UsageError with one clear line."""
    from pydantic import ValidationError

    from session import models as m
    from session.commands import launcher_problem
    from session.repository import repository_problem
    from session.timing import apply_env

    repo = Path(args.repo).expanduser()
    if not repo.is_dir():
        raise UsageError(f"--repo {args.repo}: no such directory")
    problem = repository_problem(repo)
    if problem is not None:
        raise UsageError(f"--repo: {problem}")
    problem = launcher_problem(args.launcher)
    if problem is not None:
        raise UsageError(problem)
    try:
        workloads = [m.Workload.parse(spec) for spec in args.workload]
        metric = m.Metric.parse(args.metric, unit=args.unit, direction=args.direction)
    except (ValueError, ValidationError) as exc:
        raise UsageError(_one_line(exc)) from None
    names = {w.name for w in workloads}
    for flag, marked in (("--isolated", args.isolated), ("--training", args.training)):
        unknown = sorted(set(marked) - names)
        if unknown:
            raise UsageError(f"{flag}: no workload named {', '.join(unknown)}")
    for w in workloads:
        if w.name in args.isolated:
            w.scope = m.WorkloadScope.ISOLATED
        if w.name in args.training:
            w.training = True
    try:
        workloads = apply_env(workloads, args.env)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    contract_fields: dict[str, Any] = {
        "metric": metric,
        "workloads": workloads,
        "check": args.check,
        "hooks": m.Hooks(setup=args.setup, prepare=args.prepare, cleanup=args.cleanup),
        "launcher": args.launcher,
        "python": args.python,
        "gpu": args.gpu,
    }
    slurm = {k: getattr(args, f"slurm_{k}") for k in ("partition", "gres", "time", "account",
                                                      "job_dir")}  # fmt: skip
    if any(slurm.values()):
        contract_fields["slurm"] = m.SlurmSettings(**slurm)
    if args.timeout is not None:
        contract_fields["timeout_s"] = args.timeout
    threshold = threshold_of(args)
    if threshold is not None:
        contract_fields["threshold"] = threshold
    from session.manage import title_problem  # the one rule for titles, rename's too

    problem = title_problem(args.title)
    if problem:
        raise UsageError(f"--title: {problem}")
    try:
        contract = m.Contract(**contract_fields)
        return m.Session(title=args.title, repo=str(repo.resolve()), contract=contract)
    except ValidationError as exc:
        raise UsageError(_one_line(exc)) from None


def _one_line(exc: Exception) -> str:
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'input'}: "
            f"{e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        )
    return str(exc).removeprefix("Value error, ")


def run(args: argparse.Namespace) -> int:
    from session.api import Session
    from session.conduct.executor import shim_warnings
    from session.repository import ledger_inside_problem
    from tui.display import plain

    session = build_session(args)
    problem = ledger_inside_problem(ledger_path(args), session.repo)  # type: ignore[attr-defined]
    if problem is not None:
        raise UsageError(problem)
    with open_ledger(args) as ledger:
        Session(ledger).save(session)  # type: ignore[arg-type]
    for warning in shim_warnings(session):  # type: ignore[arg-type]
        print(f"gpuopt: warning: {plain(warning, 2000)}", file=sys.stderr)
    print(session.id)  # type: ignore[attr-defined]
    return 0
