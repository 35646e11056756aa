"""`gpuopt dispose`: decide what becomes of a variant, through the method's gates."""

from __future__ import annotations

import argparse
import sys

from session.api import CHOICE_DESCRIPTIONS as DESCRIPTIONS
from session.api import BadInput as UsageError
from session.api import (
    GateRefusal,
    LedgerError,
    Session,
    command,
    dispose,
    preflight_warnings,
    status_suggestion,
)
from tui.commands.common import open_ledger, print_json, session_of
from tui.display import plain


def run(args: argparse.Namespace) -> int:
    with open_ledger(args) as ledger:
        session = session_of(ledger, args.session)
        try:
            variant = Session(ledger, session.id).variant(args.variant)
        except LedgerError as exc:
            raise UsageError(str(exc)) from None

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
