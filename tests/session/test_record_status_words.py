"""The record's hypotheses table: a status and the change the decisions suggest read as one
account. A new user read "supported · the evidence suggests: no change" as a contradiction
(the evidence suggests nothing changed, yet the hypothesis is supported)."""

from __future__ import annotations

from pathlib import Path

from method_full import build_full_session, texts

from ledger import Ledger
from session.record import build_export, to_markdown


def _record(tmp: Path, fit: int | None = None) -> str:
    with Ledger.open(tmp / "ledger.db") as ledger:
        session = build_full_session(ledger, texts())
        data = build_export(ledger, session)
    return to_markdown(data, fit=fit) if fit else to_markdown(data)


def test_a_supported_hypothesis_with_no_status_change_says_so_in_agreeing_words(tmp_path):
    for md in (_record(tmp_path), _record(tmp_path, fit=60)):
        assert "the evidence suggests" not in md
        assert "no change" not in md.split("## Hypotheses", 1)[1].split("\n## ", 1)[0]
        assert "status change suggested" in md
