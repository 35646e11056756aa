"""Opening a ledger file safely, and the durability rules every connection follows.

A file is inspected read-only before anything writes to it: a corrupt file, a SQLite file
that is not ours, or a ledger from a newer gpuopt is never modified.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from ledger.schema import APPLICATION_ID, KNOWN_MIGRATIONS, MIGRATION_SET, migration_set

if TYPE_CHECKING:
    from sqlite_utils import Database

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


def _wal_in_use(path: Path) -> bool:
    """A -wal file with content: a writer is active, or crashed, and the file alone is not
    the whole ledger."""
    wal = path.with_name(path.name + "-wal")
    try:
        return wal.stat().st_size > 0
    except OSError:
        return False


def _can_write(path: Path) -> bool:
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _connect(path: Path, readonly: bool, *, immutable: bool = False) -> sqlite3.Connection:
    """A connection under the durability rules.

    Read-only connections never create files: SQLite makes -wal and -shm files beside a WAL
    database even for `mode=ro`, so a file that needs no WAL (none in use) or sits where we
    may not write is opened `immutable` instead (it reads the main file alone).
    """
    if readonly:
        uri = f"file:{quote(path.resolve().as_posix())}?mode=ro"
        if immutable:
            uri += "&immutable=1"
        conn = sqlite3.connect(
            uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
    else:
        conn = sqlite3.connect(
            str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def _connect_readonly(path: Path, *, leave_no_files: bool) -> sqlite3.Connection:
    """Open read-only. `leave_no_files`: the file is not ours to touch (not ours, newer, or
    in a place we may not write): read it immutable unless a WAL is in use."""
    if (leave_no_files or not _can_write(path)) and not _wal_in_use(path):
        return _connect(path, readonly=True, immutable=True)
    try:
        conn = _connect(path, readonly=True)
        conn.execute("PRAGMA schema_version").fetchone()
        return conn
    except sqlite3.OperationalError:
        # a WAL in use but no right to create its -shm: read the main file alone
        return _connect(path, readonly=True, immutable=True)


_SQLITE_MAGIC = b"SQLite format 3\x00"


def _header_problem(path: Path) -> str | None:
    """What the 100-byte header says is wrong with the file, without opening it: not a
    SQLite file at all, or shorter than the page count it records (a truncated copy)."""
    try:
        with path.open("rb") as f:
            header = f.read(100)
        size = path.stat().st_size
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        return "the file is not a SQLite database"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return "the file's header is damaged"
    page_count = int.from_bytes(header[28:32], "big")
    # The recorded page count is valid when the change counter matches "version valid for".
    if header[24:28] == header[92:96] and page_count and not _wal_in_use(path):
        expected = page_count * page_size
        if size < expected:
            return f"the file is truncated ({size} bytes of {expected})"
    return None


def _inspect(path: Path) -> tuple[bool, set[str]]:
    """Read-only look at an existing file: (is it empty of tables, applied migrations).

    Creates no file and changes no byte. Raises a LedgerError for a corrupt file or a
    SQLite file that is not a ledger.
    """
    problem = _header_problem(path)
    if problem:
        raise CorruptLedgerError(
            f"{path}: not a usable gpuopt ledger: {problem}; it was left untouched"
        )
    try:
        conn = _connect_readonly(path, leave_no_files=True)
    except sqlite3.Error as exc:
        raise CorruptLedgerError(
            f"{path}: cannot be opened as a ledger ({exc}); it was left untouched"
        ) from None
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
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
    except sqlite3.DatabaseError as exc:
        raise CorruptLedgerError(
            f"{path}: not a usable gpuopt ledger: the file is damaged ({exc}); "
            "it was left untouched"
        ) from None
    finally:
        conn.close()


class LedgerConnection:
    """One open ledger: a sqlite-utils Database plus the write discipline.

    Writes are serialized per connection by a lock, so a sampler thread and the main
    thread sharing one connection never interleave inside each other's transaction.
    """

    def __init__(
        self, path: Path, readonly: bool, newer: bool = False, why_readonly: str = ""
    ) -> None:
        self.path = path
        self.readonly = readonly
        self.newer = newer  # written by a newer gpuopt: opened read-only, never changed
        self.why_readonly = why_readonly
        if readonly:
            self.conn = _connect_readonly(path, leave_no_files=newer or not _can_write(path))
        else:
            self.conn = _connect(path, readonly=False)
            try:
                self.conn.execute("PRAGMA journal_mode = WAL")
                self.conn.execute("PRAGMA synchronous = FULL")
            except BaseException:
                self.conn.close()
                raise
        # What sqlite-utils sets on every connection it wraps: set here, since the
        # wrapper itself is made only when a migration or a savepoint needs it.
        self.conn.execute("PRAGMA recursive_triggers = ON")
        self._db: Database | None = None
        self._lock = threading.RLock()
        self._depth = 0  # nesting of write() in the thread holding _lock

    @property
    def db(self) -> Database:
        """The connection wrapped by sqlite-utils, made on first use: opening a ledger to
        read it (the app's first frame, `gpuopt sessions`) does not import it."""
        if self._db is None:
            from ledger.sqlite_lib import Database

            self._db = Database(self.conn, execute_plugins=False)
        return self._db

    @contextlib.contextmanager
    def write(self) -> Iterator[Database]:
        """One write transaction, taken with BEGIN IMMEDIATE so a second writer waits for
        the lock instead of failing when it upgrades from a read. Nested calls in the same
        thread become savepoints of the outer transaction."""
        if self.readonly:
            raise ReadOnlyLedgerError(
                f"{self.path}: {self.why_readonly or 'the ledger is open read-only'}; "
                "nothing was changed"
            )
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    with self.db.atomic():  # a savepoint inside the outer transaction
                        yield self.db
                finally:
                    self._depth -= 1
                return
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self.db
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")
            finally:
                self._depth = 0

    def close(self) -> None:
        self.conn.close()


def open_connection(path: Path | str, readonly: bool = False) -> LedgerConnection:
    """Open (creating if needed) a ledger, applying migrations unless read-only.

    A read-only file or folder, or a ledger from a newer gpuopt, is opened read-only;
    a file that is not a ledger, or is damaged, raises a LedgerError and is left as it was.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        raise LedgerError(f"{path}: is a directory, not a ledger file")
    exists = path.exists() and path.stat().st_size > 0
    if not exists:
        if readonly:
            raise LedgerError(f"{path}: no ledger there")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"{path.parent}: cannot create the folder ({exc.strerror})") from None
        return _initialise(path)
    empty, applied = _inspect(path)
    unknown = applied - KNOWN_MIGRATIONS
    if unknown:
        return _open_existing(
            path,
            readonly=True,
            newer=True,
            why=(
                "this ledger was written by a newer gpuopt (unknown changes "
                f"{', '.join(sorted(unknown))}): it is open read-only; upgrade gpuopt to "
                "write to it"
            ),
        )
    if readonly:
        return _open_existing(path, readonly=True, why="the ledger is open read-only")
    if not _can_write(path):
        if empty or (KNOWN_MIGRATIONS - applied):
            raise ReadOnlyLedgerError(
                f"{path}: read-only and not yet set up as a ledger of this gpuopt"
            )
        return _open_existing(path, readonly=True, why="the ledger file or its folder is read-only")
    if not (KNOWN_MIGRATIONS - applied):  # up to date: no need to take the write lock
        return _open_existing(path, readonly=False, why="")
    return _initialise(path)


def _open_existing(
    path: Path, *, readonly: bool, why: str, newer: bool = False
) -> LedgerConnection:
    try:
        return LedgerConnection(path, readonly=readonly, newer=newer, why_readonly=why)
    except sqlite3.OperationalError as exc:
        raise LedgerError(f"{path}: cannot open the ledger ({exc})") from None
    except sqlite3.DatabaseError as exc:
        raise CorruptLedgerError(f"{path}: not a usable gpuopt ledger ({exc})") from None


def _initialise(path: Path) -> LedgerConnection:
    try:
        lc = LedgerConnection(path, readonly=False)
    except sqlite3.OperationalError as exc:
        raise LedgerError(f"{path}: cannot open the ledger for writing ({exc})") from None
    except sqlite3.DatabaseError as exc:
        raise CorruptLedgerError(f"{path}: not a usable gpuopt ledger ({exc})") from None
    try:
        with lc.write() as db:
            if lc.conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                lc.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            migration_set().apply(db)
    except sqlite3.OperationalError as exc:
        lc.close()
        raise LedgerError(f"{path}: cannot set up the ledger ({exc})") from None
    except sqlite3.DatabaseError as exc:
        lc.close()
        raise CorruptLedgerError(f"{path}: not a usable gpuopt ledger ({exc})") from None
    except BaseException:
        lc.close()
        raise
    return lc
