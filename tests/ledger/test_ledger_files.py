"""Files that are not ours to change: a newer ledger, corrupt or foreign files, read-only
ones. The library and the command line give one clear line and leave every byte as it was."""

from __future__ import annotations

import hashlib
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger import (
    CorruptLedgerError,
    Ledger,
    LedgerError,
    NewerLedgerError,
    NotALedgerError,
    ReadOnlyLedgerError,
)
from session import models as m

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
assert issubclass(NewerLedgerError, LedgerError)

# Root ignores permission bits: make os.access answer as the bits say, as for any user.
AS_A_USER = """
import os, stat
_access = os.access
def access(path, mode, *a, **kw):
    if mode & os.W_OK:
        try:
            st = os.stat(path)
        except OSError:
            return _access(path, mode, *a, **kw)
        if not st.st_mode & stat.S_IWUSR:
            return False
    return _access(path, mode, *a, **kw)
os.access = access
"""


def gpuopt(*args: str, as_a_user: bool = False) -> subprocess.CompletedProcess[str]:
    prelude = AS_A_USER if as_a_user else ""
    code = f"{prelude}\nimport sys\nfrom tui.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=ENV, timeout=120
    )


def state(folder: Path) -> dict[str, str]:
    """Every file of the folder and the sha256 of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def one_clear_line(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert result.returncode == code, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    return lines[0]


def make_ledger(path: Path, sessions: int = 3) -> list[m.Session]:
    contract = m.Contract(workloads=[m.Workload(name="w", command="true")])
    made = [
        m.Session(id=f"{i:04d}abcdef", title=f"session {i}", repo="/r", contract=contract)
        for i in range(sessions)
    ]
    with Ledger.open(path) as ledger:
        ledger.put(*made)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # WAL folded in
    return made


WRITE_ARGS = ["new", "--repo", ".", "--title", "x", "--workload", "w=true"]
REVIEW_ARGS = [["sessions", "--json"], ["ledger", "check"], ["export", "0001", "--format", "json"]]


# ---------------------------------------------------------------------------- newer


def make_newer(path: Path) -> None:
    make_ledger(path)
    raw = sqlite3.connect(path)
    raw.execute(
        "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
        "VALUES ('gpuopt', 'm999_from_the_future', '2030-01-01')"
    )
    raw.execute("CREATE TABLE future_things (id INTEGER PRIMARY KEY)")
    raw.commit()
    raw.close()


def test_newer_ledger_opens_read_only_and_is_never_changed(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    make_newer(path)
    before = state(tmp_path)
    with Ledger.open(path) as ledger:
        assert ledger.readonly and ledger.newer
        assert len(ledger.list(m.Session)) == 3
        with pytest.raises(ReadOnlyLedgerError, match=r"newer gpuopt.*m999_from_the_future"):
            ledger.put(m.Hypothesis(session_id="0000abcdef", title="t"))
        with pytest.raises(ReadOnlyLedgerError):
            ledger.insert_samples([("s", None, 1, "host", *([None] * 16))])
    assert state(tmp_path) == before


@pytest.mark.slow
def test_newer_ledger_through_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    make_newer(path)
    before = state(tmp_path)
    line = one_clear_line(gpuopt("--ledger", str(path), *WRITE_ARGS))
    assert "newer gpuopt" in line and "nothing was changed" in line
    for args in REVIEW_ARGS:
        result = gpuopt("--ledger", str(path), *args)
        assert result.returncode == 0, (args, result.stderr)
    assert "newer" in gpuopt("--ledger", str(path), "ledger", "check").stdout
    assert state(tmp_path) == before


# ---------------------------------------------------------------------------- damaged


def _random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(7).randbytes(64 * 1024))


def _truncated(path: Path) -> None:
    make_ledger(path, sessions=400)
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.truncate(size // 2)


def _truncated_mid_page(path: Path) -> None:
    make_ledger(path, sessions=400)
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size - 1000)


def _header_only(path: Path) -> None:
    make_ledger(path)
    with path.open("r+b") as f:
        f.truncate(100)


def _other_program(path: Path) -> None:
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA journal_mode = WAL")
    raw.execute("CREATE TABLE songs (title TEXT)")
    raw.execute("INSERT INTO songs VALUES ('x')")
    raw.commit()
    raw.close()


def _text_file(path: Path) -> None:
    path.write_text("SQLite format 3? no, just notes\n" * 10)


DAMAGED = {
    "random bytes": (_random_bytes, CorruptLedgerError),
    "truncated": (_truncated, CorruptLedgerError),
    "truncated mid-page": (_truncated_mid_page, CorruptLedgerError),
    "header only": (_header_only, CorruptLedgerError),
    "another program": (_other_program, NotALedgerError),
    "text file": (_text_file, CorruptLedgerError),
}
COMMANDS = [WRITE_ARGS, *REVIEW_ARGS]


@pytest.mark.parametrize("case", list(DAMAGED))
def test_damaged_or_foreign_files_are_refused_untouched(tmp_path: Path, case: str) -> None:
    make, error = DAMAGED[case]
    path = tmp_path / "l.db"
    make(path)
    before = state(tmp_path)
    for readonly in (False, True):
        with pytest.raises(error) as info:
            Ledger.open(path, readonly=readonly)
        assert str(path) in str(info.value) and "\n" not in str(info.value)
    for args in COMMANDS if case == "random bytes" else COMMANDS[:2]:
        line = one_clear_line(gpuopt("--ledger", str(path), *args))
        assert str(path) in line and "untouched" in line, line
    assert state(tmp_path) == before


def test_damage_inside_a_ledger_gives_one_line_and_keeps_the_file(tmp_path: Path) -> None:
    """Damage the header check cannot see: a page in the middle overwritten."""
    path = tmp_path / "l.db"
    make_ledger(path, sessions=400)
    page = 4096
    with path.open("r+b") as f:
        f.seek(4 * page)
        f.write(random.Random(3).randbytes(3 * page))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    for args in (["sessions", "--json"], ["export", "0001"]):
        line = one_clear_line(gpuopt("--ledger", str(path), *args), code=1)
        assert "damaged" in line
    check = gpuopt("--ledger", str(path), "ledger", "check")
    assert check.returncode == 1 and "problem" in check.stdout and not check.stderr
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_ledger_path_with_uri_characters(tmp_path: Path) -> None:
    folder = tmp_path / "a b#c?d%20e"
    folder.mkdir()
    path = folder / "l?x#.db"
    make_newer(path)
    with Ledger.open(path) as ledger:  # read-only path builds a file: URI
        assert ledger.newer and len(ledger.list(m.Session)) == 3


def test_missing_ledger(tmp_path: Path) -> None:
    path = tmp_path / "none.db"
    with pytest.raises(LedgerError, match="no ledger"):
        Ledger.open(path, readonly=True)
    result = gpuopt("--ledger", str(path), "sessions", "--json")
    assert result.returncode == 0 and result.stdout.strip() == "[]"
    one_clear_line(gpuopt("--ledger", str(path), "export", "abc"))
    assert not path.exists()
    line = one_clear_line(gpuopt("--ledger", str(tmp_path), "sessions"))
    assert "directory" in line


# ---------------------------------------------------------------------------- read-only


@pytest.fixture
def read_only_ledger(tmp_path: Path) -> Any:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "l.db"
    make_ledger(path)
    path.chmod(0o444)
    folder.chmod(0o555)
    yield path
    folder.chmod(0o755)
    path.chmod(0o644)


@pytest.mark.slow
def test_read_only_ledger_can_be_reviewed_not_written(read_only_ledger: Path) -> None:
    path = read_only_ledger
    before = state(path.parent)
    as_a_user = os.geteuid() == 0
    for args in REVIEW_ARGS:
        result = gpuopt("--ledger", str(path), *args, as_a_user=as_a_user)
        assert result.returncode == 0, (args, result.stderr)
    listed = gpuopt("--ledger", str(path), "sessions", "--json", as_a_user=as_a_user)
    assert '"session 2"' in listed.stdout
    exported = gpuopt("--ledger", str(path), "export", "0001", "--format", "md",
                      as_a_user=as_a_user)  # fmt: skip
    assert "session 1" in exported.stdout
    line = one_clear_line(gpuopt("--ledger", str(path), *WRITE_ARGS, as_a_user=as_a_user))
    assert "read-only" in line and "nothing was changed" in line
    assert state(path.parent) == before
