"""One ledger opened many times in one process, and rows others wrote: the locks of an open
connection survive a second opening, a bad row is shown rather than fatal, and a stale
copy of a record never overwrites a newer one."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest

from ledger import Ledger
from ledger.db import LedgerError, NotALedgerError, refuse_overwrite
from ledger.store import ConflictError, UnreadableRowError
from session import models as m

CONTRACT = m.Contract(workloads=[m.Workload(name="w", command="true")])


def _session(sid: str = "s1", title: str = "t") -> m.Session:
    return m.Session(id=sid, title=title, repo="/r", contract=CONTRACT)


def _my_locks(*paths: Path) -> list[str]:
    """This process's fcntl locks on the given files, as /proc/locks lists them."""
    inodes = {os.stat(p).st_ino for p in paths if p.exists()}
    mine = []
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields:  # a waiter, not a held lock
            continue
        pid, where = int(fields[4]), fields[5]
        if pid == os.getpid() and int(where.split(":")[2]) in inodes:
            mine.append(" ".join(fields[1:]))
    return sorted(mine)


def test_a_second_opening_keeps_the_first_connections_locks(tmp_path: Path) -> None:
    """Closing any descriptor of a file drops the process's fcntl locks on it: the header
    check of a second opening used to do that, under the open connection's feet."""
    path = tmp_path / "l.db"
    first = Ledger.open(path)
    first.put(_session())
    first.session_rows()
    files = (path, path.with_name("l.db-shm"))
    before = _my_locks(*files)
    assert before, "an open WAL connection holds locks"
    for readonly in (False, True, False):
        Ledger.open(path, readonly=readonly).close()
        assert _my_locks(*files) == before
    first.close()


def test_one_connection_per_process_per_ledger(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    a = Ledger.open(path)
    b = Ledger.open(path)
    ro = Ledger.open(path, readonly=True)
    assert a.db.conn is b.db.conn is ro.db.conn
    b.close()  # closing one opening leaves the others working
    a.put(_session())
    assert [s.id for s in ro.list(m.Session)] == ["s1"]
    ro.close()
    a.close()
    with Ledger.open(path) as again:  # the last close really closed it
        assert again.db.conn is not a.db.conn


def test_threads_sharing_the_connection_never_mix_transactions(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    main, sink = Ledger.open(path), Ledger.open(path)
    main.put(_session())
    errors: list[BaseException] = []

    def write_samples() -> None:
        try:
            for i in range(200):
                sink.insert_samples([m.TelemetrySample(session_id="s1", t_us=i, source="host")])
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=write_samples)
    thread.start()
    for i in range(100):
        with pytest.raises(RuntimeError), main.write():
            main.put(_session(f"gone{i}"))
            raise RuntimeError("rolled back")  # must not take the sampler's rows along
    thread.join()
    assert errors == []
    assert len(main.samples(session_id="s1")) == 200
    assert [s.id for s in main.list(m.Session)] == ["s1"]
    assert main.check() == []
    main.close()
    sink.close()


def _corrupt(path: Path, table: str, rowid: int, data: str) -> None:
    raw = sqlite3.connect(path)
    raw.execute(f"UPDATE {table} SET data = ? WHERE rowid = ?", (data, rowid))
    raw.commit()
    raw.close()


@pytest.mark.parametrize(
    "data",
    ['{"id": "s2", "title"', '{"id": "s2", "title": 7}', None],
    ids=["invalid json", "wrong type", "extra field"],
)
def test_an_unreadable_row_is_named_and_the_rest_is_read(tmp_path: Path, data: str | None) -> None:
    path = tmp_path / "l.db"
    with Ledger.open(path) as ledger:
        ledger.put(_session("s1"), _session("s2"), _session("s3"))
    if data is None:  # a valid row plus a field the model does not know
        data = _session("s2").model_dump_json()[:-1] + ', "surprise": 1}'
    _corrupt(path, "sessions", 2, data)
    with Ledger.open(path, readonly=True) as ledger:
        assert [s.id for s in ledger.list(m.Session)] == ["s1", "s3"]
        [bad] = ledger.unreadable
        assert (bad.table, bad.rowid) == ("sessions", 2)
        assert str(bad).startswith("unreadable row: sessions rowid 2: ")
        with pytest.raises(UnreadableRowError, match="sessions rowid 2") as info:
            ledger.get(m.Session, "s2")
        assert "\n" not in str(info.value)
        assert [(r.table, r.rowid) for r in ledger.validate_rows()] == [("sessions", 2)]


def test_a_stale_copy_never_overwrites_a_newer_row(tmp_path: Path) -> None:
    """The app's copy of a session, saved after the CLI changed it, is refused, naming what
    the CLI changed; the CLI's edit survives."""
    path = tmp_path / "l.db"
    with Ledger.open(path) as app, Ledger.open(path) as cli:
        app.put(_session())
        read = app.get_versioned(m.Session, "s1")
        assert read is not None
        cli.put(read.model.model_copy(update={"title": "edited from the CLI"}))
        mine = read.model.model_copy(update={"repo": "/elsewhere"})
        with pytest.raises(ConflictError, match=r"changed elsewhere.*\(title\)") as info:
            app.put_if_unchanged(mine, read)
        assert info.value.changed_fields == ["title"]
        assert info.value.current.title == "edited from the CLI"  # type: ignore[attr-defined]
        stored = cli.get(m.Session, "s1")
        assert stored is not None and stored.title == "edited from the CLI"
        assert stored.repo == "/r"
        fresh = app.get_versioned(m.Session, "s1")
        assert fresh is not None
        saved = app.put_if_unchanged(fresh.model.model_copy(update={"repo": "/x"}), fresh)
        assert saved.version == fresh.version + 1 and saved.model.title == "edited from the CLI"


def test_versions_survive_an_upgrade_from_a_ledger_without_them(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    with Ledger.open(path) as ledger:
        ledger.put(_session())
        raw = ledger.db.conn
        first = ledger.get_versioned(m.Session, "s1")
        assert first is not None and first.version == 1
        ledger.put(_session(title="again"))
        again = ledger.get_versioned(m.Session, "s1")
        assert again is not None and again.version == 2
        assert raw.execute("SELECT version FROM sessions").fetchone()[0] == 2


def test_files_that_are_not_regular_are_never_ledgers(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(LedgerError, match="not a regular file"):
        Ledger.open(fifo)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]
    journal = Path("/dev/null-journal")
    existed = journal.exists()
    with pytest.raises(LedgerError, match="not a regular file"):
        Ledger.open("/dev/null")
    assert journal.exists() == existed


def test_an_empty_sqlite_file_of_another_program_is_foreign(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA user_version = 3")
    raw.close()
    before = path.read_bytes()
    with pytest.raises(NotALedgerError, match="another program"):
        Ledger.open(path)
    assert path.read_bytes() == before


def test_writing_over_a_ledger_or_any_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    (tmp_path / "notes.md").write_text("old notes\n")
    with Ledger.open(path) as ledger:
        ledger.put(_session())
        for target in (path, path.with_name("l.db-wal"), path.with_name("l.db-shm")):
            with pytest.raises(LedgerError, match="that is the ledger"):
                refuse_overwrite(target, path)
        os.link(path, tmp_path / "hardlink.db")
        with pytest.raises(LedgerError, match="that is the ledger"):
            refuse_overwrite(tmp_path / "hardlink.db", None)  # another name, same file
        with pytest.raises(LedgerError, match="SQLite database"):
            refuse_overwrite(other, path)
        refuse_overwrite(tmp_path / "notes.md", path)  # an ordinary file may be replaced
        refuse_overwrite(tmp_path / "new.md", path)
        assert ledger.check() == []


def test_validation_names_columns_that_disagree_with_their_record(tmp_path: Path) -> None:
    """A listing reads the columns, the export the record: a hand-edited column would make
    them tell two stories."""
    path = tmp_path / "l.db"
    with Ledger.open(path) as ledger:
        ledger.put(_session("s1", "the real title"))
        ledger.insert_samples([m.TelemetrySample(session_id="s1", t_us=1, source="host")])
        assert ledger.validate_rows() == []
    raw = sqlite3.connect(path)
    raw.execute("UPDATE sessions SET title = 'LISTED TITLE'")
    raw.execute("UPDATE telemetry_batches SET samples = '{bad'")
    raw.commit()
    raw.close()
    with Ledger.open(path, readonly=True) as ledger:
        found = [(r.table, r.rowid, r.reason) for r in ledger.validate_rows()]
    assert found == [
        ("sessions", 1, "title differ from the stored record"),
        ("telemetry_batches", 1, "samples are not valid JSON"),
    ]
