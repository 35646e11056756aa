"""Helpers shared by the command handlers (imported inside handlers, never at start-up)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tui.cli import UsageError


def open_ledger(args: argparse.Namespace, readonly: bool = False) -> Any:
    from ledger import Ledger

    return Ledger.open(args.ledger, readonly=readonly)


def session_of(ledger: Any, ref: str) -> Any:
    from ledger import AmbiguousSessionError, SessionNotFoundError

    try:
        return ledger.resolve_session(ref)
    except (SessionNotFoundError, AmbiguousSessionError) as exc:
        raise UsageError(str(exc)) from None


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")
