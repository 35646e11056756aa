"""The record's contract names every check a round runs, as the app's contract pane does:
a torch workload's harness check is a check, never "—"."""

from __future__ import annotations

from pathlib import Path

from ledger import Ledger
from session import models as m
from session.record import gather, to_markdown
from session.torch_checks import HARNESS_CHECK


def _record(tmp_path: Path, workloads: list[m.Workload], check: str | None = None) -> str:
    with Ledger.open(tmp_path / "l.db") as ledger:
        contract = m.Contract(workloads=workloads, check=check)
        s = m.Session(title="t", repo=str(tmp_path), contract=contract)
        ledger.put(s)
        return to_markdown(gather(ledger, s))


def _check_row(md: str) -> str:
    return next(line for line in md.splitlines() if line.startswith("| correctness check |"))


def test_a_torch_workloads_harness_check_is_named(tmp_path: Path) -> None:
    row = _check_row(_record(tmp_path, [m.Workload.parse("softmax=torch:bench:run")]))
    assert "softmax: " + HARNESS_CHECK in row


def test_a_shell_session_without_a_check_says_so(tmp_path: Path) -> None:
    row = _check_row(_record(tmp_path, [m.Workload(name="w", command="true")]))
    assert "compared on speed only" in row
