"""The session layer's view of the ledger: `LedgerLike` names what it uses, and the real
ledger (a real SQLite file) is one; a store that lacks a method is not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ledger import Ledger
from session import models as m
from session.ledger_port import LedgerLike

ROOT = Path(__file__).resolve().parents[2]


def test_the_real_ledger_is_ledger_like(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l.db") as ledger:
        assert isinstance(ledger, LedgerLike)
        port: LedgerLike = ledger
        contract = m.Contract(workloads=[m.Workload(name="w", command="true")])
        session = m.Session(title="t", repo=str(tmp_path), contract=contract)
        port.put(session)
        assert port.get(m.Session, session.id) == session
        assert [s.id for s in port.list(m.Session)] == [session.id]
        assert port.latest_baseline(session.id) is None
        assert port.path == tmp_path / "l.db"


def test_a_store_without_the_methods_is_not() -> None:
    class HalfAStore:
        def get(self, cls: type, key: str) -> None:
            return None

    assert not isinstance(HalfAStore(), LedgerLike)


@pytest.mark.slow
def test_mypy_holds_the_ledger_to_the_port(tmp_path: Path) -> None:
    """Statically too: a class that drifts from the port is refused where it is passed."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from session.ledger_port import LedgerLike\n"
        "from ledger.store import Ledger\n"
        "def fine(ledger: Ledger) -> LedgerLike:\n"
        "    return ledger\n"
        "class Drifted:\n"
        "    def get(self, cls: type, key: str) -> None: ...\n"
        "def wrong(store: Drifted) -> LedgerLike:\n"
        "    return store\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent", str(probe)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, result.stdout
    assert "probe.py:8:" in errors[0] and "Drifted" in errors[0]
