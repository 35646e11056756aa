"""`gpuopt new`: start a session with its correctness contract."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from session import models as m
from session.api import BadInput as UsageError
from session.api import (
    Session,
    apply_env,
    launcher_problem,
    ledger_inside_problem,
    repository_problem,
    shim_warnings,
    title_problem,
)
from tui.commands.common import ledger_path, open_ledger
from tui.commands.run_opts import threshold_of
from tui.display import plain


def build_session(args: argparse.Namespace) -> m.Session:
    """The Session the arguments describe; raises UsageError with one clear line."""
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

    problem = title_problem(args.title)
    if problem:
        raise UsageError(f"--title: {problem}")
    try:
        contract = m.Contract(**contract_fields)
        return m.Session(title=args.title, repo=str(repo.resolve()), contract=contract)
    except ValidationError as exc:
        raise UsageError(_one_line(exc)) from None


def _one_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'input'}: "
            f"{e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        )
    return str(exc).removeprefix("Value error, ")


def run(args: argparse.Namespace) -> int:
    session = build_session(args)
    problem = ledger_inside_problem(ledger_path(args), session.repo)
    if problem is not None:
        raise UsageError(problem)
    with open_ledger(args) as ledger:
        Session(ledger).save(session)
    for warning in shim_warnings(session):
        print(f"gpuopt: warning: {plain(warning, 2000)}", file=sys.stderr)
    print(session.id)
    return 0
