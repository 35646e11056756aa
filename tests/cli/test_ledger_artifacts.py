"""`gpuopt ledger check` lists the correctness artifacts beside the ledger with their size;
`gpuopt ledger prune-artifacts` deletes the folders no stored result names (all with
--all), keeps recent ones a running check may still claim, and --dry-run deletes nothing.
A real ledger file and real folders."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ledger import Ledger
from session import models as m
from tui.cli import main

OLD = time.time() - 3600


def gpuopt(capsys, ledger: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--ledger", str(ledger), *args])
    out, err = capsys.readouterr()
    return code, out, err


def folder(path: Path, size: int, old: bool = True) -> Path:
    path.mkdir(parents=True)
    (path / "trial-0.pt").write_bytes(b"x" * size)
    if old:
        for p in (path / "trial-0.pt", path):
            os.utime(p, (OLD, OLD))
    return path


def setup(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    db = tmp_path / "l.db"
    root = tmp_path / "l.db.artifacts"
    with Ledger.open(db) as ledger:
        s = m.Session(title="t", repo=str(tmp_path), contract=m.Contract(
            workloads=[m.Workload.parse("gelu=torch:k:run")]))  # fmt: skip
        ledger.put(s)
        dirs = {
            "ref": folder(root / s.id / "reference" / "abc-gelu-s0-t3", 4000),
            "used": folder(root / s.id / "v1" / "gelu-s0-t3", 3000),
            "stale": folder(root / s.id / "v2" / "gelu-s0-t3", 2000),
            "gone": folder(root / "deleted-session" / "v9" / "gelu-s0-t3", 1000),
            "recent": folder(root / s.id / "v3" / "gelu-s0-t3", 500, old=False),
        }
        ledger.put(m.Variant(id="v1", session_id=s.id, name="v1",
                             snapshot=m.Snapshot(commit="a" * 40, ref="HEAD")))  # fmt: skip
        kept = [str(dirs["ref"]), str(dirs["used"])]
        ledger.put(m.CorrectnessResult(session_id=s.id, variant_id="v1", workload="gelu",
                                       passed=True, artifacts=kept))  # fmt: skip
    return db, dirs


def test_check_lists_artifacts_and_their_size(tmp_path, capsys):
    db, dirs = setup(tmp_path)
    code, out, err = gpuopt(capsys, db, "ledger", "check")
    assert code == 0, err
    assert "artifacts: 5 folder(s), 10.3 KiB" in out and "3 not referenced" in out
    line = next(ln for ln in out.splitlines() if str(dirs["stale"]) in ln)
    assert "not referenced" in line and "1.95 KiB" in line
    assert "in use" in next(ln for ln in out.splitlines() if str(dirs["used"]) in ln)
    assert "recent" in next(ln for ln in out.splitlines() if str(dirs["recent"]) in ln)
    code, out, _ = gpuopt(capsys, db, "ledger", "check", "--json")
    report = json.loads(out)
    assert report["artifacts"]["bytes"] == 10500
    assert len(report["artifacts"]["folders"]) == 5


def test_prune_deletes_only_unreferenced_settled_folders(tmp_path, capsys):
    db, dirs = setup(tmp_path)
    code, out, err = gpuopt(capsys, db, "ledger", "prune-artifacts", "--dry-run")
    assert code == 0, err
    assert "would delete 2 folder(s), would free 2.93 KiB" in out
    assert all(p.exists() for p in dirs.values())  # a dry run deletes nothing
    code, out, err = gpuopt(capsys, db, "ledger", "prune-artifacts")
    assert code == 0, err
    assert "deleted 2 folder(s), freed 2.93 KiB" in out and "kept 1 written" in out
    assert not dirs["stale"].exists() and not dirs["gone"].exists()
    assert not (tmp_path / "l.db.artifacts" / "deleted-session").exists()  # emptied: gone
    assert dirs["ref"].exists() and dirs["used"].exists() and dirs["recent"].exists()
    code, out, err = gpuopt(capsys, db, "ledger", "prune-artifacts", "--all")
    assert code == 0, err
    assert "deleted 3 folder(s), freed 7.32 KiB" in out
    assert not any(p.exists() for p in dirs.values())


def test_prune_refuses_when_a_correctness_row_cannot_be_read(tmp_path, capsys):
    import sqlite3

    db, dirs = setup(tmp_path)
    con = sqlite3.connect(db)
    con.execute("UPDATE correctness SET data = '{\"broken\": 1}'")
    con.commit()
    con.close()
    code, _, err = gpuopt(capsys, db, "ledger", "prune-artifacts")
    assert code != 0 and "cannot be read" in err and "nothing deleted" in err
    assert all(p.exists() for p in dirs.values())


def test_prune_keeps_a_profile_trace_an_evidence_row_names(tmp_path, capsys):
    db, _ = setup(tmp_path)
    with Ledger.open(db) as ledger:
        s = ledger.list(m.Session)[0]
        trace = tmp_path / "l.db.artifacts" / s.id / "profiles" / "baseline-gelu.trace.json"
        trace.parent.mkdir(parents=True)
        trace.write_text("{}")
        os.utime(trace, (OLD, OLD))
        stray = trace.with_name("old-gelu.trace.json")
        stray.write_text("{}")
        os.utime(stray, (OLD, OLD))
        ledger.put(m.Evidence(session_id=s.id, title="profile", path=str(trace)))
    code, _, err = gpuopt(capsys, db, "ledger", "prune-artifacts")
    assert code == 0, err
    assert trace.exists() and not stray.exists()
