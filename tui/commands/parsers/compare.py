"""The parser of `gpuopt compare`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.compare, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse

from tui.commands.parsers.numbers import number, within
from tui.commands.parsers.options import add_threshold


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="compare commands (hyperfine's first look, interleaved and paired)",
        description=(
            "Run the commands in interleaved blocks (each once per block, in a fresh random "
            "order), after a warm-up, until every command is decided against the first (the "
            "reference) at the band, or at --max-runs. Prints each command's mean ± σ, "
            "median, range, user and system time, and each one's ratio to the reference "
            "with the interval that decided its verdict, labelled with its confidence. Stores "
            "nothing unless --ledger is given: then the comparison is kept as a session of its "
            "own, which sessions, review and export "
            "show. Options as hyperfine's where they mean the same; --runs is a minimum."
        ),
    )
    p.add_argument(
        "commands", nargs="+", metavar="COMMAND", help="commands; the first is the reference"
    )
    p.add_argument(
        "-w",
        "--warmup",
        type=number("warmup"),
        default=1,
        metavar="N",
        help=f"warm-up runs of each (1; {within('warmup')})",
    )
    p.add_argument(
        "-r",
        "--runs",
        type=number("runs"),
        default=10,
        metavar="N",
        help=f"at least N runs of each (10; {within('runs')})",
    )
    p.add_argument(
        "--max-runs",
        type=number("max-runs"),
        default=30,
        metavar="N",
        help=f"at most N runs of each (30; {within('max-runs')})",
    )
    p.add_argument("-p", "--prepare", metavar="CMD", help="run before every timing run")
    p.add_argument("-s", "--setup", metavar="CMD", help="run once, before the first run")
    p.add_argument("-c", "--cleanup", metavar="CMD", help="run once, after the last run")
    p.add_argument(
        "-S",
        "--shell",
        default="bash",
        metavar="SHELL",
        help="shell of the commands (bash); 'none' runs them without one",
    )
    p.add_argument("-N", action="store_true", dest="no_shell", help="as --shell=none")
    add_threshold(p, "the band of the verdicts", "0.02")
    p.add_argument("--budget", metavar="SECONDS", help="stop after this much time")
    p.add_argument(
        "--seed", type=number("seed"), metavar="N", help=f"seed of the run order ({within('seed')})"
    )
    p.add_argument(
        "--gpus",
        metavar="A[,B...]",
        help="GPUs by UUID or index (CUDA_VISIBLE_DEVICES): one for every command, or one per "
        "command; one command with two GPUs is the A/A check of whether they are interchangeable",
    )
    p.add_argument(
        "--across-gpus",
        action="store_true",
        help="pair figures of different GPUs (refused otherwise)",
    )
    p.add_argument("--export-json", metavar="FILE", help="hyperfine's JSON, plus our verdicts")
    p.add_argument("--export-markdown", metavar="FILE", help="hyperfine's markdown table")
    p.add_argument("--export-csv", metavar="FILE", help="every timed run as CSV (raw samples)")
    p.set_defaults(handler="tui.commands.compare:run")
