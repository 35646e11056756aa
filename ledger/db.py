"""Opening a ledger file safely, and the durability rules every connection follows.

A file is inspected read-only before anything writes to it: a corrupt file, a SQLite file
that is not ours, or a ledger from a newer gpuopt is never modified.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import platformdirs

from ledger.schema import APPLICATION_ID, KNOWN_MIGRATIONS, MIGRATION_SET, migration_set
from measure.errors import GpuoptError

if TYPE_CHECKING:
    from sqlite_utils import Database

BUSY_TIMEOUT_S = 60.0


class LedgerError(GpuoptError):
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


def _open_elsewhere(path: Path) -> bool:
    """A -wal or -shm beside the file: a connection has it open in WAL mode (or crashed).

    Its last close checkpoints, copying WAL pages into the main file, so the main file
    alone (`immutable`, no locks) may be half copied: read such a ledger through SQLite's
    locks. Both side files exist already, so a locking read-only connection creates none.
    """
    return any(p.exists() for p in ledger_files(path)[1:])


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


def _inspection_connection(path: Path) -> sqlite3.Connection:
    """A read-only connection that sees a consistent ledger and creates no file: through
    SQLite's locks when another connection has the file open, else the main file alone."""
    if _open_elsewhere(path):
        try:
            return _connect_readonly(path, leave_no_files=False)
        except sqlite3.Error:
            pass  # side files we may not open: the main file alone is all there is to read
    return _connect(path, readonly=True, immutable=True)


# A read of the main file alone can meet a checkpoint that starts after we looked for side
# files; such a read is retried (through the locks, now that the side files exist) before
# the file is called damaged.
INSPECTION_ATTEMPTS = 3


def _read_header(path: Path) -> tuple[int, int]:
    conn = _inspection_connection(path)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        # The header's page count when its change counter says it is valid, else the size.
        page_count = conn.execute("PRAGMA page_count").fetchone()[0]
        return page_size, page_count
    finally:
        conn.close()


def _header_problem(path: Path) -> str | None:
    """What the header says is wrong with the file: not a SQLite file at all, or shorter
    than the page count it records (a truncated copy).

    Read through SQLite, never through a descriptor of our own: on POSIX, closing any
    descriptor of a file drops every fcntl lock this process holds on it, including the
    locks of a connection already open to the ledger (SQLite's own file layer keeps such a
    descriptor open until its last lock is gone).
    """
    for attempt in range(INSPECTION_ATTEMPTS):
        try:
            page_size, page_count = _read_header(path)
            # the size after the header: a commit or checkpoint between the two reads then
            # only grows the file past what the header said
            size = path.stat().st_size
        except OSError as exc:
            return f"cannot be read ({exc.strerror or exc})"
        except sqlite3.DatabaseError as exc:
            if attempt + 1 < INSPECTION_ATTEMPTS and _open_elsewhere(path):
                time.sleep(0.05 * (attempt + 1))
                continue
            if isinstance(exc, sqlite3.OperationalError) and "not a database" not in str(exc):
                return f"cannot be read ({exc})"
            return "the file is not a SQLite database"
        # Open elsewhere (side files), the WAL holds pages past the main file's end: its
        # shortness is no damage, and looking again would only wait (150 ms on every
        # opening of a ledger a round or the app has open).
        elsewhere = _open_elsewhere(path)
        short = page_count * page_size > size >= 100 and page_count and not elsewhere
        if short and attempt + 1 < INSPECTION_ATTEMPTS:
            # a checkpoint writes page 1 (the new count) before the pages that lengthen
            # the file, and its writer may close before we look for it: a truncated
            # copy stays short, a checkpoint's file does not
            time.sleep(0.05 * (attempt + 1))
            continue
        break
    if size < 100:
        return "the file is not a SQLite database"
    expected = page_count * page_size
    if page_count and not elsewhere and size < expected:
        return f"the file is truncated ({size} bytes of {expected})"
    return None


def is_sqlite_file(path: Path) -> bool:
    """Does a file (not one of our open ledgers: check `same_file_as_open_ledger` first)
    start with SQLite's magic?"""
    try:
        with path.open("rb") as f:
            return f.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def ledger_files(path: Path) -> list[Path]:
    """The files that make up a ledger: the database, its WAL and its shared memory."""
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


SIDE_SUFFIXES = ("-wal", "-shm", "-journal")


def side_file_of(path: Path) -> Path | None:
    """The SQLite database whose WAL, shared memory or rollback journal `path` is, if any:
    writing such a file loses that database's last transactions."""
    for suffix in SIDE_SUFFIXES:
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            base = path.with_name(path.name[: -len(suffix)])
            if base.is_file() and is_sqlite_file(base):
                return base
    return None


def refuse_overwrite(target: Path, ledger_path: Path | None) -> None:
    """Raise a LedgerError when writing `target` would destroy a ledger: the open one, its
    -wal or -shm, a ledger this process has open, or any SQLite file."""
    if not target.exists():
        return
    if not target.is_file():
        raise LedgerError(f"{target}: not a regular file; nothing was written")
    owned = ledger_files(ledger_path) if ledger_path else []
    with _REGISTRY_LOCK:
        owned += [p for shared in _REGISTRY.values() for p in ledger_files(shared.path)]
    if any(_same_file(target, p) for p in owned):
        raise LedgerError(f"{target}: that is the ledger (or its -wal/-shm); nothing was written")
    if is_sqlite_file(target):
        raise LedgerError(
            f"{target}: a SQLite database is there; choose another path; nothing was written"
        )
    base = side_file_of(target)
    if base is not None:
        raise LedgerError(
            f"{target}: belongs to the SQLite database {base}; choose another path; "
            "nothing was written"
        )


# The triggers gpuopt's migrations make (sqlite-utils' full-text triggers), by name, with
# their exact SQL. A trigger is code that runs inside our own writes: a ledger holding any
# other (or one of these changed) came from someone else, and is only read. A test checks
# this against a fresh ledger; a new spelling is added here, never put in place of one.
TRUSTED_TRIGGERS = {
    "hypotheses_ad": (
        'CREATE TRIGGER "hypotheses_ad" AFTER DELETE ON "hypotheses" BEGIN\n'
        '  INSERT INTO "hypotheses_fts" ("hypotheses_fts", rowid, "title", "search_text") '
        'VALUES(\'delete\', old.rowid, old."title", old."search_text");\nEND'
    ),
    "hypotheses_ai": (
        'CREATE TRIGGER "hypotheses_ai" AFTER INSERT ON "hypotheses" BEGIN\n'
        '  INSERT INTO "hypotheses_fts" (rowid, "title", "search_text") '
        'VALUES (new.rowid, new."title", new."search_text");\nEND'
    ),
    "hypotheses_au": (
        'CREATE TRIGGER "hypotheses_au" AFTER UPDATE ON "hypotheses" BEGIN\n'
        '  INSERT INTO "hypotheses_fts" ("hypotheses_fts", rowid, "title", "search_text") '
        'VALUES(\'delete\', old.rowid, old."title", old."search_text");\n'
        '  INSERT INTO "hypotheses_fts" (rowid, "title", "search_text") '
        'VALUES (new.rowid, new."title", new."search_text");\nEND'
    ),
}


def foreign_triggers(conn: sqlite3.Connection) -> list[str]:
    """The triggers of a ledger that gpuopt did not make, or that were changed."""
    return sorted(
        name
        for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
        if TRUSTED_TRIGGERS.get(name) != sql
    )


def _inspect(path: Path) -> tuple[bool, set[str], list[str]]:
    """Read-only look at an existing file: (is it empty of tables, applied migrations,
    triggers gpuopt did not make).

    Creates no file and changes no byte. Raises a LedgerError for a corrupt file or a
    SQLite file that is not a ledger.
    """
    problem = _header_problem(path)
    if problem:
        raise CorruptLedgerError(
            f"{path}: not a usable gpuopt ledger: {problem}; it was left untouched"
        )
    for attempt in range(INSPECTION_ATTEMPTS):
        try:
            conn = _inspection_connection(path)
        except sqlite3.Error as exc:
            raise CorruptLedgerError(
                f"{path}: cannot be opened as a ledger ({exc}); it was left untouched"
            ) from None
        try:
            return _read_inspection(path, conn)
        except sqlite3.DatabaseError as exc:
            if attempt + 1 < INSPECTION_ATTEMPTS and _open_elsewhere(path):
                time.sleep(0.05 * (attempt + 1))
                continue  # a checkpoint met a read of the main file alone: see above
            raise CorruptLedgerError(
                f"{path}: not a usable gpuopt ledger: the file is damaged ({exc}); "
                "it was left untouched"
            ) from None
        finally:
            conn.close()
    raise AssertionError("unreachable: the last attempt returns or raises")


def _read_inspection(path: Path, conn: sqlite3.Connection) -> tuple[bool, set[str], list[str]]:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    # Empty and unmarked: ours to set up, unless another program numbered its schema.
    user_version = conn.execute("PRAGMA user_version").fetchone()[0]
    if not tables and app_id == 0 and user_version == 0:
        return True, set(), []
    if app_id != APPLICATION_ID:
        raise NotALedgerError(
            f"{path}: not a gpuopt ledger (a SQLite file of another program); it was left untouched"
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
    return False, applied, foreign_triggers(conn)


class _Shared:
    """One SQLite connection to one ledger file, shared by every opening of that file in
    this process and by all its threads.

    One connection per process per file: SQLite's locks are fcntl locks, owned by the
    process, so several connections of one process to one file coordinate only through
    SQLite's own bookkeeping; one connection under one lock leaves nothing to coordinate.
    """

    def __init__(self, key: tuple[int, int, bool], path: Path, conn: sqlite3.Connection):
        self.key = key
        self.path = path
        self.conn = conn
        self.lock = threading.RLock()
        self.depth = 0  # nesting of write() in the thread holding the lock
        self.users = 0
        self.db: Database | None = None


_REGISTRY: dict[tuple[int, int, bool], _Shared] = {}
_REGISTRY_LOCK = threading.Lock()


def _file_key(path: Path, writable: bool) -> tuple[int, int, bool]:
    st = path.stat()
    return (st.st_dev, st.st_ino, writable)


def _enter_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL, waiting as long as any other lock wait would.

    SQLite answers a change of journal mode that meets another connection's lock (several
    processes creating one ledger at once) with `database is locked` at once, without its
    busy handler, so the wait is ours.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            locked = "locked" in str(exc) or "busy" in str(exc)
            if not locked or time.monotonic() > deadline:
                raise
        time.sleep(pause)  # a back-off between tries, not a wait for an event
        pause = min(pause * 2, 0.05)


def _new_connection(path: Path, readonly: bool, leave_no_files: bool) -> sqlite3.Connection:
    if readonly:
        conn = _connect_readonly(path, leave_no_files=leave_no_files)
    else:
        conn = _connect(path, readonly=False)
        try:
            _enter_wal(conn)
            conn.execute("PRAGMA synchronous = FULL")
        except BaseException:
            conn.close()
            raise
    # What sqlite-utils sets on every connection it wraps: set here, since the wrapper
    # itself is made only when a migration or a savepoint needs it.
    conn.execute("PRAGMA recursive_triggers = ON")
    return conn


def _acquire(path: Path, readonly: bool, leave_no_files: bool) -> _Shared:
    """The process's connection to `path` (a writable one serves read-only openings too)."""

    def lookup() -> _Shared | None:
        try:
            keys = [_file_key(path, True)] + ([_file_key(path, False)] if readonly else [])
        except OSError:
            return None  # not created yet
        for key in keys:
            if key in _REGISTRY:
                _REGISTRY[key].users += 1
                return _REGISTRY[key]
        return None

    with _REGISTRY_LOCK:
        found = lookup()
        if found is not None:
            return found
        conn = _new_connection(path, readonly, leave_no_files)
        shared = _Shared(_file_key(path, not readonly), path, conn)
        shared.users = 1
        _REGISTRY[shared.key] = shared
        return shared


def _release(shared: _Shared) -> None:
    with _REGISTRY_LOCK:
        shared.users -= 1
        if shared.users > 0:
            return
        if _REGISTRY.get(shared.key) is shared:
            del _REGISTRY[shared.key]
    with shared.lock:
        shared.conn.close()


class LedgerConnection:
    """One opening of a ledger: the process's shared connection plus the write discipline.

    Writes and reads are serialized by the shared connection's lock, so a sampler thread
    and the main thread never interleave inside each other's transaction.
    """

    def __init__(
        self, path: Path, readonly: bool, newer: bool = False, why_readonly: str = ""
    ) -> None:
        self.path = path
        self.readonly = readonly
        self.newer = newer  # written by a newer gpuopt: opened read-only, never changed
        self.why_readonly = why_readonly
        self._shared = _acquire(path, readonly, leave_no_files=newer or not _can_write(path))
        self._closed = False

    @property
    def conn(self) -> sqlite3.Connection:
        return self._shared.conn

    @property
    def lock(self) -> threading.RLock:
        """Held by whoever uses the connection: take it around a read that iterates."""
        return self._shared.lock

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Every row of one statement, read under the connection's lock."""
        with self._shared.lock:
            return self._shared.conn.execute(sql, params).fetchall()

    def fetch_named(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        with self._shared.lock:
            cur = self._shared.conn.execute(sql, params)
            return [d[0] for d in cur.description or ()], cur.fetchall()

    @property
    def db(self) -> Database:
        """The connection wrapped by sqlite-utils, made on first use: opening a ledger to
        read it (the app's first frame, `gpuopt sessions`) does not import it."""
        shared = self._shared
        if shared.db is None:
            from ledger.sqlite_lib import Database  # lazy: see the docstring

            shared.db = Database(shared.conn, execute_plugins=False)
        return shared.db

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
        shared = self._shared
        with shared.lock:
            if shared.depth:
                shared.depth += 1
                try:
                    with self.db.atomic():  # a savepoint inside the outer transaction
                        yield self.db
                finally:
                    shared.depth -= 1
                return
            shared.conn.execute("BEGIN IMMEDIATE")
            shared.depth = 1
            try:
                yield self.db
            except BaseException:
                if shared.conn.in_transaction:
                    shared.conn.execute("ROLLBACK")
                raise
            else:
                shared.conn.execute("COMMIT")
            finally:
                shared.depth = 0

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            _release(self._shared)


def open_connection(path: Path | str, readonly: bool = False) -> LedgerConnection:
    """Open (creating if needed) a ledger, applying migrations unless read-only.

    A read-only file or folder, or a ledger from a newer gpuopt, is opened read-only;
    a file that is not a ledger, or is damaged, raises a LedgerError and is left as it was.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        raise LedgerError(f"{path}: is a directory, not a ledger file")
    if path.exists() and not path.is_file():
        raise LedgerError(f"{path}: not a regular file, so not a ledger; it was left untouched")
    base = side_file_of(path)
    if base is not None:
        raise LedgerError(
            f"{path}: belongs to the SQLite database {base}, so it is not a ledger; "
            "it was left untouched"
        )
    exists = path.exists() and path.stat().st_size > 0
    if not exists:
        if readonly:
            raise LedgerError(f"{path}: no ledger there")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"{path.parent}: cannot create the folder ({exc.strerror})") from None
        return _initialise(path)
    empty, applied, strangers = _inspect(path)
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
    if strangers:  # reading runs no trigger; a write of ours would run theirs
        return _open_existing(
            path,
            readonly=True,
            why=(
                f"it holds triggers gpuopt did not make ({', '.join(strangers)}), which would "
                "run inside every write: it is open read-only (review it, or drop them with "
                "sqlite3 if they are yours)"
            ),
        )
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
