"""The parser of `gpuopt new`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.new, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse

from tui.commands.parsers.numbers import number, within
from tui.commands.parsers.options import add_threshold


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
    p.set_defaults(handler="tui.commands.new:run")
