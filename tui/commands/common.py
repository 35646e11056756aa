"""Helpers shared by the command handlers (imported inside handlers, never at start-up)."""

from __future__ import annotations

import argparse

# Lazy imports, on purpose: `gpuopt --help` imports this module, and must not pay for
# textual, pydantic or the engine (tests/cli/test_cli_imports.py). Each handler imports
# what it uses.
import json
import sys
from typing import Any

from tui.cli import UsageError


def ledger_path(args: argparse.Namespace) -> Any:
    """The ledger file a command uses: --ledger, else GPUOPT_LEDGER, else the default."""
    from pathlib import Path

    from session.ledger_access import default_ledger_path

    return Path(args.ledger).expanduser() if args.ledger else default_ledger_path()


def open_ledger(args: argparse.Namespace, readonly: bool = False) -> Any:
    from session.ledger_access import Ledger

    return Ledger.open(ledger_path(args), readonly=readonly)


def session_of(ledger: Any, ref: str) -> Any:
    from session.ledger_access import AmbiguousSessionError, SessionNotFoundError

    try:
        return ledger.resolve_session(ref)
    except (SessionNotFoundError, AmbiguousSessionError) as exc:
        raise UsageError(str(exc)) from None


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")
