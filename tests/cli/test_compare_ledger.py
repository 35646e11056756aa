"""`gpuopt compare --ledger`: the comparison kept as a session that sessions and export
show; without --ledger nothing is written, GPUOPT_LEDGER or not."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tui.cli import main


def gpuopt(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_compare_with_a_ledger_is_a_session_that_sessions_and_export_show(tmp_path, capsys):
    db = tmp_path / "l.db"
    runs = ("--runs", "6", "--max-runs", "6", "--seed", "7")
    code, out, err = gpuopt(capsys, "--ledger", str(db), "compare", "true", "sleep 0.05", *runs)
    assert code == 0, err
    assert "SLOWER" in out and "stored as session" in err
    sid = err.split("stored as session ")[1].split()[0]

    code, out, err = gpuopt(capsys, "--ledger", str(db), "sessions")
    assert code == 0, err
    assert sid in out and "compare: true vs sleep 0.05" in out

    code, out, err = gpuopt(capsys, "--ledger", str(db), "export", sid, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    (rnd,) = doc["rounds"]
    assert rnd["blocks"] == 6
    (c,) = rnd["comparisons"]
    assert c["verdict"] == "SLOWER" and c["ratio"] > 1.5 and c["n"] == 6
    assert c["baseline_median"] is not None and c["variant_median"] > c["baseline_median"]

    code, out, err = gpuopt(capsys, "--ledger", str(db), "export", sid)
    assert code == 0, err
    assert "SLOWER" in out and "sleep 0.05" in out

    with sqlite3.connect(db) as conn:  # every timed run kept, 6 blocks of two commands
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 12
    code, out, err = gpuopt(capsys, "--ledger", str(db), "ledger", "check")
    assert code == 0, (out, err)


def test_compare_without_a_ledger_writes_none(tmp_path, capsys, monkeypatch):
    env_ledger = tmp_path / "env" / "ledger.db"
    monkeypatch.setenv("GPUOPT_LEDGER", str(env_ledger))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    code, _out, err = gpuopt(capsys, "compare", "true", "true", "--runs", "2", "--max-runs", "2")
    assert code == 0, err
    assert "stored" not in err
    assert not env_ledger.exists() and not env_ledger.parent.exists()
    written = [p for p in Path(tmp_path).rglob("*") if p.is_file()]
    assert written == [], written
