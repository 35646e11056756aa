"""Opening a ledger while other processes write it and close it (CI found this).

Every last close of a WAL ledger checkpoints: it copies the WAL's pages into the main file.
A reader that looks at the main file alone (SQLite's `immutable`), without the locks that
keep a checkpoint out, can see it half copied and call a whole ledger "not a SQLite
database". Inspection must read a ledger another process has open through SQLite's locks.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from overlap import ENV, WRITER, integrity_problems

from ledger import Ledger
from ledger.db import LedgerError

SECONDS = 12.0


@pytest.mark.slow
def test_opening_never_calls_a_ledger_being_checkpointed_damaged(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with Ledger.open(path):
        pass
    stop = threading.Event()
    writer_failures: list[str] = []
    writers_run = 0

    def writers() -> None:
        nonlocal writers_run
        while not stop.is_set():
            done = subprocess.run(
                [sys.executable, str(WRITER), str(path), f"w{writers_run}", "2", "0", "2", "3000"],
                capture_output=True, text=True, env=ENV, timeout=120,
            )  # fmt: skip
            if done.returncode != 0:
                writer_failures.append(done.stderr.strip()[-300:])
            writers_run += 1

    thread = threading.Thread(target=writers)
    thread.start()
    refused: list[str] = []
    opens = 0
    end = time.monotonic() + SECONDS
    try:
        while time.monotonic() < end or writers_run < 5:
            try:
                with Ledger.open(path):
                    pass
            except LedgerError as exc:
                refused.append(str(exc))
            opens += 1
    finally:
        stop.set()
        thread.join()
    assert writers_run >= 5 and opens > 100
    assert refused == [], f"{len(refused)} of {opens} openings refused: {refused[:2]}"
    assert writer_failures == []
    assert integrity_problems(path) == []
