"""`gpuopt dispose`: decide what becomes of a variant, through the method's gates."""

from __future__ import annotations

import argparse
import sys

from session.errors import BadInput as UsageError
from tui.commands.common import open_ledger, print_json, session_of

# At the head only what costs `gpuopt CMD --help` no module of weight (the standard
# library, tui.commands.common); pydantic, rich and the engine are imported inside the
# handlers, so help never pays for them (tests/cli/test_cli_imports.py).

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
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from session.api import LedgerError, Session
    from session.commands import command
    from session.dispositions import DESCRIPTIONS, dispose, preflight_warnings, status_suggestion
    from session.gates import GateRefusal

    with open_ledger(args) as ledger:
        session = session_of(ledger, args.session)
        try:
            variant = Session(ledger, session.id).variant(args.variant)
        except LedgerError as exc:
            raise UsageError(str(exc)) from None
        from tui.display import plain

        for line in preflight_warnings(ledger, session):
            print(f"gpuopt: warning: {plain(line, 2000)}", file=sys.stderr)
        try:
            d = dispose(
                ledger,
                session,
                variant,
                args.choice,
                optimization_class=args.opt_class,
                accepted_semantics=args.accept_semantics,
                guards=args.guard,
                fallback=args.fallback,
                failure_cases=args.failure_case,
                remaining_bottlenecks=args.remaining,
                reason=args.reason,
                reopen_when=args.reopen_when,
            )
        except GateRefusal as exc:
            raise UsageError(f"refused: {exc.reason}") from None
        suggestion = status_suggestion(ledger, d)
    if args.json:
        print_json(d.model_dump(mode="json"))
    else:
        cls = f" ({d.optimization_class.value})" if d.optimization_class else ""
        print(f"{plain(variant.name)}: {DESCRIPTIONS[d.choice]}{cls} — recorded as {plain(d.id)}")
    if suggestion is not None:  # offered, never applied here: the person runs it, or not
        out = sys.stderr if args.json else sys.stdout
        print(f"suggested, not applied: {plain(suggestion.text, 2000)}", file=out)
        print(f"  to apply it: {plain(command(*suggestion.command(session.id)), 4000)}", file=out)
    return 0
