"""The parser of `gpuopt demo`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.demo, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse

from tui.commands.parsers.numbers import number, within


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="try gpuopt on a small PyTorch softmax repository it creates",
        description=(
            "Create a demo git repository (a naive softmax with three one-change branches: "
            "fused, no-max, same) and a session on it, then open the app. With --no-tui the "
            "whole session runs headless and the decision record is printed."
        ),
    )
    p.add_argument(
        "--dir",
        metavar="DIR",
        help="where to create the repository (default: the user data directory)",
    )
    p.add_argument(
        "--no-tui",
        action="store_true",
        help="run the whole flow headless and print the decision record",
    )
    p.add_argument(
        "--workload",
        choices=("auto", "kernelbench", "command"),
        default="auto",
        help="time through the torch harness (kernelbench) or the repository's bench.py (command); "
        "auto picks the harness where installed",
    )
    # Defaults None: those of `gpuopt baseline` and `gpuopt round` (not imported here, so
    # --help stays light).
    p.add_argument(
        "--runs",
        type=number("runs"),
        metavar="N",
        help="at least N baseline runs per workload (default: as `gpuopt baseline`)",
    )
    p.add_argument(
        "--max-runs",
        type=number("max-runs"),
        metavar="N",
        help="at most N baseline runs per workload (default: as `gpuopt baseline`)",
    )
    p.add_argument(
        "--blocks",
        type=number("blocks"),
        metavar="N",
        help="minimum blocks of the round (default: as `gpuopt round`)",
    )
    p.add_argument(
        "--max-blocks",
        type=number("max-blocks"),
        metavar="N",
        help="the round stops here if not every comparison is decided before "
        "(default: as `gpuopt round`)",
    )
    p.add_argument(
        "--seed",
        type=number("seed"),
        default=1,
        help=f"seed of the round's run order ({within('seed')})",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="start a new demo session (by default the app resumes the one made before)",
    )
    p.set_defaults(handler="tui.commands.demo:run")
