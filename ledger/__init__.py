"""The gpuopt ledger: one SQLite file holding every session, run and decision."""

from ledger.db import (
    CorruptLedgerError,
    LedgerError,
    NewerLedgerError,
    NotALedgerError,
    ReadOnlyLedgerError,
    default_ledger_path,
)
from ledger.store import AmbiguousSessionError, Ledger, SessionNotFoundError

__all__ = [
    "AmbiguousSessionError",
    "CorruptLedgerError",
    "Ledger",
    "LedgerError",
    "NewerLedgerError",
    "NotALedgerError",
    "ReadOnlyLedgerError",
    "SessionNotFoundError",
    "default_ledger_path",
]
