"""`gpuopt export --schema` prints the JSON export's schema (the text of
docs/decision_record.schema.json, generated from the record's model) without a session or a
ledger; with a session or another format it is refused in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _gpuopt(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUOPT_LEDGER": str(tmp_path / "l.db")}
    return subprocess.run([sys.executable, "-m", "tui", *argv], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)  # fmt: skip


def test_export_schema_prints_the_documented_schema_and_opens_no_ledger(tmp_path: Path) -> None:
    done = _gpuopt(tmp_path, "export", "--schema")
    assert done.returncode == 0, done.stderr
    expected = (ROOT / "docs" / "decision_record.schema.json").read_text(encoding="utf-8")
    assert done.stdout == expected
    schema = json.loads(done.stdout)
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert "gpuopt-session" in schema["title"]
    assert not (tmp_path / "l.db").exists()


def test_export_schema_goes_alone_and_export_still_needs_a_session(tmp_path: Path) -> None:
    for argv in (["export", "--schema", "abc"], ["export", "--schema", "--format", "csv"]):
        done = _gpuopt(tmp_path, *argv)
        assert done.returncode == 2, argv
        assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
        assert "--schema goes alone" in done.stderr
    done = _gpuopt(tmp_path, "export")
    assert done.returncode == 2 and "give a SESSION" in done.stderr, done.stderr
    assert not (tmp_path / "l.db").exists()
