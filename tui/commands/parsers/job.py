"""The parser of `gpuopt job`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.job, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse


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
    ls.set_defaults(handler="tui.commands.job:list_cmd")
    for name, handler, text in (
        (
            "follow",
            "tui.commands.job:follow_cmd",
            "import the job's journal until it ends, showing its progress",
        ),
        (
            "cancel",
            "tui.commands.job:cancel_cmd",
            "scancel the job (queued or running) and close its round",
        ),
    ):
        c = jsub.add_parser(name, help=text)
        c.add_argument(
            "job", metavar="JOB", help="gpuopt job id (or prefix), Slurm job id, or round id"
        )
        c.set_defaults(handler=handler)
