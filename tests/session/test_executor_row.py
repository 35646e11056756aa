"""Issue 21 item 4: the executor fills a run's row with one validation of the whole row,
not one per field (pydantic's validate_assignment: ~20 a run, ~0.1 ms of a short command's
run), and the row is still a valid one."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger import Ledger
from session import models as m
from session.conduct.executor import ProcessExecutor


def test_a_run_is_filled_in_one_go_and_stays_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        contract = m.Contract(workloads=[m.Workload(name="t", command="true")])
        session = m.Session(title="t", repo=str(tmp_path), contract=contract)
        ledger.put(session)
        ex = ProcessExecutor(ledger, session, None)
        run = m.Run(session_id=session.id, arm="baseline", workload="t", block=1)
        assigned: list[str] = []
        real = m.Model.__setattr__

        def counted(self: m.Model, name: str, value: object) -> None:
            assigned.append(name)
            real(self, name, value)

        monkeypatch.setattr(m.Model, "__setattr__", counted)
        got = ex.run(run, tmp_path)
        monkeypatch.undo()
        ex.close()
        stored = ledger.get(m.Run, run.id)
    assert got is run  # filled in place: callers keep the object they passed
    assert assigned == [], assigned
    assert run.status is m.RunStatus.OK and run.exit_code == 0 and run.value is not None
    assert run.wall_s is not None and run.wall_s > 0 and run.ended_us >= run.started_us > 0
    assert run.trust is m.Trust.UNKNOWN and run.trust_reasons  # no telemetry: said so
    assert m.Run.model_validate(run.model_dump()) == run
    assert {"status", "value", "wall_s", "trust", "telemetry"} <= run.model_fields_set
    assert stored == run
