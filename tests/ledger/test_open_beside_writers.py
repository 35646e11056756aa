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
from overlap import ENV, integrity_problems

from ledger import Ledger
from ledger.db import LedgerError

CLOSER = Path(__file__).with_name("ledger_closer.py")
# Openings go on at least this long, and until the writer has closed the ledger (each
# close a checkpoint) at least CLOSES times. One process looping open, write, close
# closed it 184 times in 4 s beside 2,881 openings, where a process per close (a Python
# start each) closed it 55 times in 12 s beside 9,785: three times the openings that
# meet a checkpoint (the fix's bug: 8 of 10,385 openings), at 7.6 CPU-s against 12.8.
SECONDS, CLOSES = 4.0, 20


@pytest.mark.slow
def test_opening_never_calls_a_ledger_being_checkpointed_damaged(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with Ledger.open(path):
        pass
    closer = subprocess.Popen(
        [sys.executable, str(CLOSER), str(path), "w"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=ENV,
    )  # fmt: skip
    closes = 0

    def count_closes() -> None:
        nonlocal closes
        assert closer.stdout is not None
        for line in closer.stdout:
            if line.startswith("closed "):
                closes = int(line.split()[1])

    reader = threading.Thread(target=count_closes)
    reader.start()
    refused: list[str] = []
    opens = 0
    end = time.monotonic() + SECONDS
    try:
        while (time.monotonic() < end or closes < CLOSES) and closer.poll() is None:
            try:
                with Ledger.open(path):
                    pass
            except LedgerError as exc:
                refused.append(str(exc))
            opens += 1
    finally:
        assert closer.stdin is not None
        closer.stdin.close()  # it stops after the turn in progress
        reader.join()  # its output ends when it does
        assert closer.stderr is not None
        err = closer.stderr.read()
        closer.wait(timeout=120)
    assert closer.returncode == 0, err[-500:]
    assert closes >= CLOSES and opens > 100
    assert refused == [], f"{len(refused)} of {opens} openings refused: {refused[:2]}"
    assert integrity_problems(path) == []
