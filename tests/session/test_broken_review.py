"""The review list shows BROKEN, never FASTER, for a variant whose check failed, with the
record's model or without it, and a decision only on the round it rests on."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from test_broken_export import build_broken_session

from ledger import Ledger
from session.read_model import load_view
from session.record import gather
from tui.screens.review import session_summary


@pytest.mark.parametrize("with_record", [True, False])
def test_review_list_says_broken_not_faster(tmp_path: Path, with_record: bool) -> None:
    with Ledger.open(tmp_path / "l.db") as ledger:
        s = build_broken_session(ledger)
        view = load_view(ledger, s.id)
        record = gather(ledger, s, view) if with_record else None
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(session_summary(view, record))
    lines = console.export_text().splitlines()
    nomax = [line for line in lines if " nomax " in line]
    assert len(nomax) == 3  # one per round
    assert all("BROKEN" in line and "NaN 0→80" in line for line in nomax)
    assert not any("FASTER" in line for line in nomax)
    fused = [line for line in lines if " fused " in line]
    assert all("FASTER" in line for line in fused)
    # rounds 1 and 2 are untrusted and carry no decision made after round 3
    assert [("untrusted" in line, "keep as the default path" in line) for line in fused] == [
        (True, False),
        (True, False),
        (False, True),
    ]
