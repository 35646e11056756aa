"""Opening a ledger file safely, and the durability rules every connection follows.

A file is inspected read-only before anything writes to it: a corrupt file, a SQLite file
that is not ours, or a ledger from a newer gpuopt is never modified.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from sqlite_utils import Database

from ledger.schema import APPLICATION_ID, KNOWN_MIGRATIONS, MIGRATION_SET, migrations

BUSY_TIMEOUT_S = 60.0


class LedgerError(Exception):
    """A ledger problem to show as one clear line."""


class NotALedgerError(LedgerError):
    pass


class CorruptLedgerError(LedgerError):
    pass


class NewerLedgerError(LedgerError):
    pass


class ReadOnlyLedgerError(LedgerError):
    pass


def default_ledger_path() -> Path:
    import platformdirs

    env = os.environ.get("GPUOPT_LEDGER")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("gpuopt", appauthor=False)) / "ledger.db"


def _connect(path: Path, readonly: bool) -> sqlite3.Connection:
    if readonly:
        uri = f"file:{path.resolve().as_posix()}?mode=ro"
        conn = sqlite3.connect(
            uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
    else:
        conn = sqlite3.connect(
            str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _inspect(path: Path) -> tuple[bool, set[str]]:
    """Read-only look at an existing file: (is it empty of tables, applied migrations).

    Raises a LedgerError for a corrupt file or a SQLite file that is not a ledger.
    """
    try:
        conn = _connect(path, readonly=True)
    except sqlite3.Error as exc:
        raise CorruptLedgerError(f"{path}: cannot be opened as a ledger ({exc})") from None
    try:
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        except sqlite3.DatabaseError as exc:
            raise CorruptLedgerError(
                f"{path}: not a gpuopt ledger: the file is not a SQLite database or is "
                f"damaged ({exc}); it was left untouched"
            ) from None
        if not tables and app_id == 0:
            return True, set()
        if app_id != APPLICATION_ID:
            raise NotALedgerError(
                f"{path}: not a gpuopt ledger (a SQLite file of another program); "
                "it was left untouched"
            )
        applied: set[str] = set()
        if "_sqlite_migrations" in tables:
            applied = {
                r[0]
                for r in conn.execute(
                    "SELECT name FROM _sqlite_migrations WHERE migration_set = ?",
                    (MIGRATION_SET,),
                )
            }
        return False, applied
    finally:
        conn.close()


class LedgerConnection:
    """One open ledger: a sqlite-utils Database plus the write discipline."""

    def __init__(self, path: Path, readonly: bool, newer: bool = False):
        self.path = path
        self.readonly = readonly
        self.newer = newer  # written by a newer gpuopt: opened read-only, never changed
        self.conn = _connect(path, readonly)
        if not readonly:
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = FULL")
        self.db = Database(self.conn, execute_plugins=False)

    @contextlib.contextmanager
    def write(self) -> Iterator[Database]:
        """One write transaction, taken with BEGIN IMMEDIATE so a second writer waits for
        the lock instead of failing when it upgrades from a read."""
        if self.readonly:
            why = "written by a newer gpuopt" if self.newer else "opened read-only"
            raise ReadOnlyLedgerError(f"{self.path}: the ledger is {why}; nothing was changed")
        if self.conn.in_transaction:  # nested: sqlite-utils turns this into a savepoint
            with self.db.atomic():
                yield self.db
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


def open_connection(path: Path | str, readonly: bool = False) -> LedgerConnection:
    """Open (creating if needed) a ledger, applying migrations unless read-only.

    A read-only file on disk, or a ledger from a newer gpuopt, is opened read-only.
    """
    path = Path(path).expanduser()
    exists = path.exists() and path.stat().st_size > 0
    if path.is_dir():
        raise LedgerError(f"{path}: is a directory, not a ledger file")
    if not exists:
        if readonly:
            raise LedgerError(f"{path}: no ledger there")
        path.parent.mkdir(parents=True, exist_ok=True)
        return _initialise(path)
    empty, applied = _inspect(path)
    unknown = applied - KNOWN_MIGRATIONS
    if unknown:
        return LedgerConnection(path, readonly=True, newer=True)
    if readonly or not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK):
        if empty or (KNOWN_MIGRATIONS - applied):
            if readonly:
                return LedgerConnection(path, readonly=True)
            raise ReadOnlyLedgerError(f"{path}: read-only and not yet set up as a ledger")
        return LedgerConnection(path, readonly=True)
    return _initialise(path)


def _initialise(path: Path) -> LedgerConnection:
    lc = LedgerConnection(path, readonly=False)
    try:
        with lc.write() as db:
            if lc.conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                lc.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            migrations.apply(db)
    except BaseException:
        lc.close()
        raise
    return lc
