"""`gpuopt hypothesis list` says a hypothesis's concern areas in words (session.concerns
LABELS), never as the stored values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger import Ledger
from session import models as m
from session.concerns import LABELS
from tui.cli import main


def test_concern_areas_are_listed_in_words(tmp_path: Path, capsys: Any) -> None:
    db = tmp_path / "l.db"
    with Ledger.open(db) as ledger:
        s = m.Session(
            title="t", repo="/r", contract=m.Contract(workloads=[m.Workload.parse("w=true")])
        )
        areas = [m.ConcernArea.PERFORMANCE_EVIDENCE, m.ConcernArea.FUSION_AND_LAYOUT]
        ledger.put(s, m.Hypothesis(session_id=s.id, title="fuse", concern_areas=areas))
    capsys.readouterr()
    assert main(["--ledger", str(db), "hypothesis", "list", s.id]) == 0
    out = capsys.readouterr().out
    assert f"  concern areas: {LABELS[areas[0]]}, {LABELS[areas[1]]}" in out.splitlines()
    assert "performance_evidence" not in out and "fusion_and_layout" not in out
