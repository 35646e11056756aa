"""The parser of `gpuopt round`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.round_cmd, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse

from tui.commands.parsers.numbers import number, within
from tui.commands.parsers.options import add_slurm_options, add_threshold


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "round",
        help="run an interleaved round: baseline and variants, paired statistics, verdicts",
        description=(
            "Run blocks in which the baseline and every variant run each workload once, in a "
            "fresh random order, each in its own worktree; stop when every comparison is "
            "decided (at least --min-blocks), at --max-blocks, or at the --budget. Progress "
            "goes to stderr, the result table to stdout. Ctrl+C stops after the current run "
            "and keeps what was measured (exit 130)."
        ),
    )
    p.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    p.add_argument("--variants", metavar="A,B", help="variants to measure (default: all)")
    p.add_argument(
        "--min-blocks",
        type=number("min-blocks"),
        default=10,
        metavar="N",
        help=f"at least N blocks (10; {within('min-blocks')})",
    )
    p.add_argument(
        "--max-blocks",
        type=number("max-blocks"),
        default=30,
        metavar="N",
        help=f"at most N blocks (30; {within('max-blocks')})",
    )
    add_threshold(p, "the noise band of the verdicts")
    p.add_argument(
        "--budget", metavar="SECONDS", help=f"stop after this much time ({within('budget')} s)"
    )
    p.add_argument(
        "--seed",
        type=number("seed"),
        metavar="N",
        help=f"seed of the block order, recorded ({within('seed')})",
    )
    p.add_argument("--json", action="store_true", help="print the round as JSON")
    p.add_argument(
        "--keep-outputs",
        action="store_true",
        help="keep the torch checks' saved outputs after the round (they are removed)",
    )
    p.add_argument(
        "--no-telemetry",
        action="store_true",
        help="no GPU/host sampling (every run's trust stays unknown)",
    )

    add_slurm_options(p)
    p.set_defaults(handler="tui.commands.round_cmd:run")
