"""A real round with telemetry (two openings of the ledger in its process) while another
process writes the same ledger in a loop: the ledger stays whole, every time.

Before one connection per process and a header read through SQLite, 4 of 5 such overlaps
ended with "database disk image is malformed". `tests/benchmarks/concurrency.py` repeats
this 50 times; the suite does it five times.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from overlap import overlap_once, prepare

from ledger import Ledger
from session import models as m


@pytest.mark.parametrize("attempt", range(5))
@pytest.mark.slow
def test_a_round_beside_a_looping_writer_leaves_the_ledger_whole(
    tmp_path: Path, attempt: int
) -> None:
    path, sid = prepare(tmp_path)
    code, problems = overlap_once(path, sid, f"w{attempt}")
    assert problems == []
    assert code == 0
    with Ledger.open(path) as ledger:
        assert ledger.check() == [] and ledger.validate_rows() == []
        [rnd] = ledger.list(m.Round, session_id=sid)
        assert rnd.status is m.RoundStatus.COMPLETED and rnd.blocks == 4
        assert len(ledger.list(m.Session)) > 1  # the writer did write meanwhile
        assert ledger.samples(session_id=sid)  # and so did the round's telemetry
