"""`gpuopt export -o` never writes over a ledger, the record it writes carries no control
sequence, and `gpuopt ledger check` names rows the models cannot read."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from ledger import Ledger
from session import models as m
from tui.cli import main

HOSTILE = "title \x1b]0;owned\x07 \x1b[2J \x9b31m \u202eevil \x1b]52;c;ZWNobw==\x07 [/dev/shm]"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.db"
    contract = m.Contract(workloads=[m.Workload(name="bench[fp16]", command="true")])
    with Ledger.open(path) as ledger:
        ledger.put(m.Session(id="s1", title=HOSTILE, repo="/r", contract=contract))
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _gpuopt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
def test_export_refuses_to_write_over_the_ledger(
    db: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    with Ledger.open(db) as ledger:  # keep the -wal and -shm in place
        before = _digest(db)
        target = db.with_name(db.name + suffix)
        assert target.exists()
        code, out, err = _gpuopt(capsys, "--ledger", str(db), "export", "s1", "-o", str(target))
        assert code == 2 and "that is the ledger" in err and "nothing was written" in err
        assert len(err.strip().splitlines()) == 1 and out == ""
        assert _digest(db) == before and ledger.check() == []


def test_export_refuses_any_sqlite_file_and_a_non_file(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "results.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    before = _digest(other)
    code, _, err = _gpuopt(capsys, "--ledger", str(db), "export", "s1", "-o", str(other))
    assert code == 2 and "SQLite database" in err and _digest(other) == before
    code, _, err = _gpuopt(capsys, "--ledger", str(db), "export", "s1", "-o", str(tmp_path))
    assert code == 2 and "not a regular file" in err


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_the_exported_record_carries_no_control_sequence(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    code, out, _ = _gpuopt(capsys, "--ledger", str(db), "export", "s1", "--format", fmt)
    assert code == 0
    target = tmp_path / f"record.{fmt}"
    assert _gpuopt(capsys, "--ledger", str(db), "export", "s1", "--format", fmt,
                   "-o", str(target))[0] == 0  # fmt: skip
    for text in (out, target.read_text(encoding="utf-8")):
        raw = [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]
        assert raw == [] and "\u202e" not in text
        if fmt == "json":
            assert json.loads(text)["session"]["title"] == HOSTILE  # the value, whole
        else:
            # shown, not acted on: the escape renders as \x1b on GitHub
            assert "&#92;x1b&#93;0;owned" in text and "&#92;u202eevil" in text


def test_ledger_check_names_unreadable_rows(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Ledger.open(db) as ledger:
        first = ledger.get(m.Session, "s1")
        assert first is not None
        ledger.put(m.Session(id="s2", title="fine", repo="/r", contract=first.contract))
    raw = sqlite3.connect(db)
    raw.execute("UPDATE sessions SET data = '{\"id\": 3}' WHERE id = 's2'")
    raw.commit()
    raw.close()
    code, out, _ = _gpuopt(capsys, "--ledger", str(db), "ledger", "check")
    assert code == 1 and "1 problem(s)" in out
    assert "unreadable row: sessions rowid 2: id: Input should be a valid string" in out
    code, out, _ = _gpuopt(capsys, "--ledger", str(db), "ledger", "check", "--json")
    report = json.loads(out)
    assert code == 1 and not report["ok"] and report["problems"][0].startswith("unreadable row")
