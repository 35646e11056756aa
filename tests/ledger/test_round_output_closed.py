"""A reader that goes away (`gpuopt round ... 2>&1 | head -1`) is no reason to fail the
measurement: the round runs to its end and is recorded as completed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from overlap import ENV, prepare

from ledger import Ledger
from session import models as m


@pytest.mark.slow
def test_a_round_whose_progress_reader_left_completes(tmp_path: Path) -> None:
    path, sid = prepare(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "--ledger", str(path), "round", sid,
         "--min-blocks", "4", "--max-blocks", "4"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV,
    )  # fmt: skip
    assert proc.stderr is not None
    proc.stderr.readline()  # the first line, as `head -1` reads it, then goes away
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0
    with Ledger.open(path) as ledger:
        [rnd] = ledger.list(m.Round, session_id=sid)
    assert rnd.status is m.RoundStatus.COMPLETED and rnd.error is None
    assert rnd.blocks == 4
