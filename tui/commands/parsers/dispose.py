"""The parser of `gpuopt dispose`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.dispose, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse

CHOICES = ("keep-default", "keep-guarded", "keep-local", "reject", "need-evidence")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dispose",
        help="record the disposition of a variant (keep, guard, reject, ...) through its gates",
        description=(
            "Record what becomes of a variant. Each choice has gates: keep-default needs a "
            "passing correctness result, FASTER on the target metric (isolated and end-to-end "
            "when the contract has both), error statistics for C2 and above, explicit "
            "acceptance for C3/C4, guards and a fallback, a gradient check on a training "
            "path, and no untrusted runs; reject needs a reason and a reopening condition. "
            "A refused gate exits 2 and says why."
        ),
    )
    p.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    p.add_argument("variant", metavar="VARIANT", help="variant name or id")
    p.add_argument(
        "--choice",
        required=True,
        choices=CHOICES,
        help="keep as the default, keep behind a guard, keep as a local micro-optimization, "
        "reject, or wait for more evidence",
    )
    p.add_argument(
        "--class",
        dest="opt_class",
        choices=("C1", "C2", "C3", "C4", "NA"),
        help="optimization class: C1 bit-identical, C2 reordered arithmetic, "
        "C3 changed precision, C4 changed semantics, NA no floating-point effect",
    )
    p.add_argument(
        "--accept-semantics",
        action="store_true",
        help="accept explicitly the precision or semantics change of C3/C4",
    )
    p.add_argument(
        "--guard",
        action="append",
        default=[],
        metavar="TEXT",
        help="a condition under which the fast path is used (repeat)",
    )
    p.add_argument("--fallback", default="", metavar="TEXT", help="what runs when a guard fails")
    p.add_argument(
        "--failure-case",
        action="append",
        default=[],
        metavar="TEXT",
        help="a known case where it fails or loses (repeat)",
    )
    p.add_argument(
        "--remaining",
        action="append",
        default=[],
        metavar="TEXT",
        help="a bottleneck that remains (repeat)",
    )
    p.add_argument("--reason", default="", metavar="TEXT", help="why this choice")
    p.add_argument(
        "--reopen-when", default="", metavar="TEXT", help="what change would reopen the question"
    )
    p.add_argument("--json", action="store_true", help="print the disposition as JSON")
    p.set_defaults(handler="tui.commands.dispose:run")
