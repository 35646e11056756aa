"""The parser of `gpuopt open`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.open_cmd, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("open", help="open the full-screen app on a session")
    p.add_argument("session", metavar="SESSION", nargs="?", help="session id or a unique prefix")
    p.add_argument(
        "--telemetry", choices=("live", "off"), default="live", help="the telemetry panel's feed"
    )
    p.set_defaults(handler="tui.commands.open_cmd:open_app")
