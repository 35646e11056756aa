"""The parser of `gpuopt baseline`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.baseline, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse

from tui.commands.parsers.numbers import number, within
from tui.commands.parsers.options import add_slurm_options, add_threshold


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "baseline",
        help="snapshot the repository and measure the baseline (reference results)",
        description=(
            "Snapshot the repository as it is on disk (uncommitted files included, your "
            "working tree, index and branches untouched), run every workload at least N "
            "times in a separate worktree after a warm-up, and keep running until the first "
            "half of its runs and the second agree or differ within the band (--threshold), "
            "or up to --max-runs or the --budget. Outcomes: reproducible; drifting (the halves "
            "differ: a warning, a round goes on paired; exit 1 only when the GPU telemetry "
            "names a cause: throttling, clocks changing, another process on the GPU); too "
            "noisy for the band (the noise and the band a round resolves at it are said; a "
            "round may go on at a band you choose). "
            "A workload whose first run fails stops it at once (exit 1)."
        ),
    )
    p.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    p.add_argument(
        "--runs",
        type=number("runs"),
        default=10,
        metavar="N",
        help=f"at least N runs per workload (10; {within('runs')})",
    )
    p.add_argument(
        "--max-runs",
        type=number("max-runs"),
        metavar="N",
        help="at most N runs per workload (30, a default round's block limit, or --runs when "
        f"that is more; {within('max-runs')})",
    )
    add_threshold(p, "the band the two halves must agree within")
    p.add_argument("--budget", metavar="SECONDS", help="run no more after this much time")
    p.add_argument(
        "--warmup",
        type=number("warmup"),
        default=1,
        metavar="N",
        help=f"excluded warm-up runs (1; {within('warmup')})",
    )
    p.add_argument("--json", action="store_true", help="print the baseline as JSON")
    p.add_argument(
        "--no-telemetry",
        action="store_true",
        help="no GPU/host sampling (every run's trust stays unknown)",
    )

    add_slurm_options(p)
    p.set_defaults(handler="tui.commands.baseline:run")
