"""The ledger as a front end reaches it: through the session layer, never by itself.

The app and the command line open, read and write the ledger with these names only, so
`tui` imports nothing of `ledger` (import-linter checks it) and a change of store is a
change here. `ENGINE_ERRORS` are the exceptions that carry one clear line for the person.
"""

from __future__ import annotations

from ledger import (
    AmbiguousSessionError,
    Ledger,
    LedgerError,
    SessionNotFoundError,
    default_ledger_path,
)
from ledger.db import refuse_overwrite
from ledger.store import ConflictError
from session.errors import GpuoptError

# Every error of gpuopt's one root (conduct's too: session.errors' families).
ENGINE_ERRORS: tuple[type[Exception], ...] = (GpuoptError,)

__all__ = [
    "ENGINE_ERRORS",
    "AmbiguousSessionError",
    "ConflictError",
    "Ledger",
    "LedgerError",
    "SessionNotFoundError",
    "default_ledger_path",
    "refuse_overwrite",
]
