"""The record's evidence hooks: each evidence row rendered generically (kind and summary),
a kind's own renderer when one is registered, and the profile section of `gpuopt profile`
(session.profile.record) placed right after the evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_broken_export import build_broken_session

import session.profile.record
from ledger import Ledger
from session import models as m
from session.record import gather, to_markdown
from session.record.evidence import RENDERERS


def test_evidence_rows_and_the_profile_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        session.profile.record, "record_markdown",
        lambda ledger, s, folder=None, view=None: ["## Profiles", "", "profile of the baseline"],
    )  # fmt: skip
    monkeypatch.setitem(RENDERERS, "measurement", lambda e: [f"measured {e.title}"])
    with Ledger.open(tmp_path / "l.db") as ledger:
        s = build_broken_session(ledger)
        ledger.put(
            m.Evidence(session_id=s.id, kind=m.EvidenceKind.NOTE, title="why", text="a note"),
            m.Evidence(session_id=s.id, kind=m.EvidenceKind.MEASUREMENT, title="bw",
                       summary={"name": "bandwidth", "value": 3.2, "unit": "TB/s"}),
        )  # fmt: skip
        md = to_markdown(gather(ledger, s))
    evidence = md.split("## Evidence", 1)[1]
    assert "| note |" in evidence and "a note" in evidence
    assert "bandwidth = 3.2 TB/s" in evidence and "measured bw" in evidence
    assert md.index("## Evidence") < md.index("## Profiles") < md.index("## Variants")
    assert "profile of the baseline" in md


def test_no_profile_no_section(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l.db") as ledger:
        x: Any = gather(ledger, build_broken_session(ledger))
    assert x.profile_lines == [] and "## Profiles" not in to_markdown(x)
