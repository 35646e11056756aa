"""Several processes creating one new ledger at the same moment all get it.

CI saw `database is locked` from a writer whose ledger was being created by three others:
SQLite answers a change to WAL mode that meets another connection's lock at once, without
waiting out the busy timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ledger import Ledger

ROOT = Path(__file__).resolve().parents[2]
OPENER = Path(__file__).with_name("ledger_opener.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
OPENERS, TRIALS = 6, 8  # 6 of 60 openings failed before the fix


@pytest.mark.slow
def test_processes_creating_one_ledger_at_once_all_open_it(tmp_path: Path) -> None:
    failures: list[str] = []
    for trial in range(TRIALS):
        path = tmp_path / f"new-{trial}.db"
        procs = [
            subprocess.Popen(
                [sys.executable, str(OPENER), str(path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=ENV,
            )
            for _ in range(OPENERS)
        ]
        for proc in procs:  # all imported and waiting: the openings start together
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            if proc.returncode != 0 or out.strip() != "opened":
                failures.append(out.strip() or err.strip())
        with Ledger.open(path) as ledger:
            assert ledger.check() == []
    assert failures == []
