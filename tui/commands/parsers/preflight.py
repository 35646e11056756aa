"""The parser of `gpuopt preflight`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.preflight, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse

from tui.commands.parsers.numbers import number, within

QUESTIONS = ("lifetime", "backing", "residency", "identity", "mutation", "schedule")


BOTTLENECKS = (
    "launch-bound",
    "bandwidth-bound",
    "compute-bound",
    "latency-bound",
    "host-bound",
    "capacity-bound",
    "unknown",
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "preflight",
        help="show or answer the preflight: six questions, checklist, bottleneck class",
        description=(
            "Without options, show the preflight. Each question is answered as measured (with "
            "the measurement or --evidence), handed to a concern area, not applicable (with "
            "why), or unknown; unknown answers are raised again at disposition time. "
            f"Questions: {', '.join(QUESTIONS)}."
        ),
    )
    p.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    p.add_argument(
        "--measured",
        action="append",
        default=[],
        metavar="Q=TEXT",
        help="answer a question with a measurement (repeat)",
    )
    p.add_argument(
        "--evidence",
        action="append",
        default=[],
        metavar="Q=EVIDENCE_ID",
        help="the recorded evidence that answers a question as measured",
    )
    p.add_argument(
        "--hand-off",
        action="append",
        default=[],
        metavar="Q=AREA[:TEXT]",
        help="hand a question to a concern area (see gpuopt hypothesis areas)",
    )
    p.add_argument(
        "--not-applicable",
        action="append",
        default=[],
        metavar="Q=WHY",
        help="the question does not apply, and why",
    )
    p.add_argument("--unknown", action="append", default=[], metavar="Q", help="mark unknown")
    p.add_argument(
        "--done",
        action="append",
        default=[],
        metavar="N[=NOTE]",
        help="tick checklist item N (1-14), with an optional note",
    )
    p.add_argument(
        "--undone",
        action="append",
        default=[],
        metavar="N",
        type=number("checklist"),
        help=f"untick checklist item N ({within('checklist')})",
    )
    p.add_argument(
        "--note", action="append", default=[], metavar="N=TEXT", help="a note on checklist item N"
    )
    p.add_argument("--bottleneck", choices=BOTTLENECKS, help="the bottleneck class")
    p.add_argument("--bottleneck-evidence", metavar="TEXT", help="what shows that class")
    p.add_argument("--json", action="store_true", help="print the preflight as JSON")
    p.set_defaults(handler="tui.commands.preflight:run")
