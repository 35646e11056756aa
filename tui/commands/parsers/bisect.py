"""The parser of `gpuopt bisect`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.bisect, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse

from tui.commands.parsers.numbers import number, within
from tui.commands.parsers.options import add_slurm_options, add_threshold

DEFAULT_THRESHOLD = "0.05"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bisect",
        help="find the commit that moved the metric (paired rounds, no false steps)",
        description=(
            "Confirm that good and bad differ with a paired round, then measure midpoints "
            "against both ends of the interval in interleaved rounds, moving on only when "
            "the sequential rule decides the side. Commits that fail to build, run or pass "
            "the check are skipped and named; several step changes are each reported with "
            "their size and interval. Each commit runs in a detached worktree; the record "
            "is kept in the ledger after every step (--resume ID goes on after Ctrl+C)."
        ),
    )
    p.add_argument("--good", metavar="REF", help="a commit with the old figure")
    p.add_argument("--bad", metavar="REF", help="a later commit with the new figure")
    p.add_argument("--repo", metavar="PATH", help="the repository (default: the session's or .)")
    p.add_argument("--session", metavar="SESSION", help="use this session's contract")
    p.add_argument("--workload", metavar="NAME", help="the session's workload to bisect on")
    p.add_argument(
        "--metric",
        metavar="SPEC",
        help="with a command: wall (default), regex:PATTERN or json:KEY (as gpuopt new)",
    )
    p.add_argument("--higher-is-better", action="store_true", help="with --metric: a rate")
    p.add_argument("--setup", metavar="CMD", help="build each commit once (a failure skips it)")
    p.add_argument("--check", metavar="CMD", help="correctness check of each commit (skips)")
    p.add_argument("--prepare", metavar="CMD", help="run before every timing run")
    add_threshold(p, "the band a change must clear", f"the contract's, else {DEFAULT_THRESHOLD}")
    p.add_argument(
        "--min-blocks",
        type=number("min-blocks"),
        default=10,
        metavar="N",
        help=f"per round (10; {within('min-blocks')})",
    )
    p.add_argument(
        "--max-blocks",
        type=number("max-blocks"),
        default=40,
        metavar="N",
        help=f"per round, its limit (40; {within('max-blocks')})",
    )
    p.add_argument(
        "--no-telemetry", action="store_true", help="no GPU telemetry (every run's trust unknown)"
    )
    p.add_argument("--resume", metavar="ID", help="go on with a stopped bisection")
    p.add_argument(
        "--show", metavar="ID", nargs="?", const="", help="print a stored bisection (or list all)"
    )
    p.add_argument("--export-markdown", metavar="FILE", help="write the record as markdown")
    p.add_argument(
        "command",
        nargs="*",
        metavar="-- COMMAND",
        help="the command to time in each commit's checkout (instead of a session)",
    )
    add_slurm_options(p)
    p.set_defaults(handler="tui.commands.bisect:run")
