"""The parser of `gpuopt profile`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.profile, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse

from tui.commands.parsers.numbers import number, within


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile",
        help="profile an arm's workloads: operators, launches, intermediates, roofline class",
        description=(
            "Run torch.profiler over a few steps of each torch or KernelBench workload in a "
            "worktree of the arm's snapshot (a pass apart from timing: profiling distorts it), "
            "and store what it shows as evidence: the operator table (kernels on a GPU), "
            "launches per step, the most frequent operator boundary, the dominant op, the "
            "intermediate tensors with their write/read pairs (and those several ops read, with "
            "what fusing producer and readers saves), FLOPs and bytes against the "
            "machine's ceilings, and a suggested bottleneck class. A variant's profile is "
            "compared with the baseline's and with its hypothesis's predicted evidence. The "
            "Chrome trace is kept beside the ledger."
        ),
    )
    p.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    p.add_argument(
        "--arm", default="baseline", metavar="ARM", help="baseline (default) or a variant's name"
    )
    p.add_argument("--workload", metavar="NAME", help="only this workload of the contract")
    p.add_argument(
        "--steps",
        type=number("steps"),
        default=3,
        metavar="N",
        help=f"steps profiled (default 3; {within('steps')})",
    )
    p.add_argument("--json", action="store_true", help="print the stored summaries as JSON")
    p.set_defaults(handler="tui.commands.profile:run")
