"""The parser of `gpuopt telemetry`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.telemetry, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse

from tui.commands.parsers.numbers import number, within


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "telemetry",
        help="live view of GPU clocks, power, temperature, throttle reasons and host load",
        description=(
            "Live view of every GPU (utilization, SM clock against max, memory, power against "
            "limit, temperature, clock-event reasons) and of the host. Ctrl+C to quit."
        ),
    )
    p.add_argument("--once", action="store_true", help="take one sample, print it and exit")
    p.add_argument("--json", action="store_true", help="with --once: print the sample as JSON")
    p.add_argument(
        "--replay",
        metavar="SCENARIO",
        help="play a recorded scenario (a name, or a JSON file) instead of the real GPUs",
    )
    p.add_argument(
        "--scenarios", action="store_true", help="list the replay scenarios shipped with gpuopt"
    )
    p.add_argument(
        "--seconds",
        type=number("seconds"),
        default=0.0,
        help=f"stop after this many seconds (0: until Ctrl+C; {within('seconds')})",
    )
    p.add_argument(
        "--interval",
        type=number("interval"),
        default=0.5,
        help=f"seconds between screen refreshes (0.5; {within('interval')})",
    )
    p.set_defaults(handler="tui.commands.telemetry:run")
