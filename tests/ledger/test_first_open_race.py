"""Several processes creating one new ledger at the same moment all get it.

CI saw `database is locked` from a writer whose ledger was being created by three others:
SQLite answers a change to WAL mode that meets another connection's lock at once, without
waiting out the busy timeout.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ledger import Ledger

ROOT = Path(__file__).resolve().parents[2]
OPENER = Path(__file__).with_name("ledger_opener.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
OPENERS, TRIALS = 6, 24  # 6 of 60 openings failed before the fix, with a fresh process each


@pytest.mark.slow
def test_processes_creating_one_ledger_at_once_all_open_it(tmp_path: Path) -> None:
    failures: list[str] = []
    gate_path = tmp_path / "gate"
    gate_path.write_bytes(b"")
    procs = [
        subprocess.Popen(
            [sys.executable, str(OPENER), str(gate_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        for _ in range(OPENERS)
    ]
    # bounds a failure only: an opener that hangs is killed, and its read then ends
    watchdog = threading.Timer(300, lambda: [proc.kill() for proc in procs])
    watchdog.start()
    try:
        for trial in range(TRIALS):
            path = tmp_path / f"new-{trial}.db"
            for proc in procs:  # each waits for its path
                assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            with gate_path.open("rb") as gate:
                fcntl.flock(gate, fcntl.LOCK_EX)  # held until every opener waits on it
                for proc in procs:
                    assert proc.stdin is not None
                    proc.stdin.write(f"{path}\n")
                    proc.stdin.flush()
                for proc in procs:
                    assert proc.stdout is not None and proc.stdout.readline().strip() == "waiting"
            # unlocked: every opener blocked in (or about to call) flock goes at once
            for proc in procs:
                assert proc.stdout is not None
                said = proc.stdout.readline().strip()
                if said != "opened":
                    failures.append(said or f"exited {proc.poll()}")
            assert path.exists()
            with Ledger.open(path) as ledger:
                assert ledger.check() == []
    finally:
        watchdog.cancel()
        for proc in procs:
            try:
                _out, err = proc.communicate(timeout=120)  # stdin closed: each ends
            except subprocess.TimeoutExpired:
                proc.kill()
                _out, err = proc.communicate()
            if proc.returncode != 0:
                failures.append(f"exit {proc.returncode}: {err.strip()[-500:]}")
    assert failures == []
