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


@pytest.mark.parametrize(
    ("command", "metric", "timeout_s", "status"),
    [
        ("exit 3", m.Metric(), 600.0, m.RunStatus.FAILED),
        ("echo no number here", m.Metric(source="regex", pattern=r"t=(?P<value>\S+)"), 600.0,
         m.RunStatus.NO_METRIC),
        ("echo '{\"t\": 1.5}'", m.Metric(source="json", pattern="t"), 600.0, m.RunStatus.OK),
        ("exec sleep 30", m.Metric(), 0.3, m.RunStatus.TIMEOUT),
        ("/nonexistent/program", m.Metric(), 600.0, m.RunStatus.FAILED),
    ],
)  # fmt: skip
def test_every_kind_of_run_is_stored_as_a_valid_row(
    tmp_path: Path, command: str, metric: m.Metric, timeout_s: float, status: m.RunStatus
) -> None:
    """Whatever the outcome (a failure, no metric, a timeout, a program that cannot start),
    the row filled in is one the ledger validates and gives back unchanged, each value of
    its field's own type."""
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        contract = m.Contract(
            workloads=[m.Workload(name="t", command=command)], metric=metric, timeout_s=timeout_s
        )
        session = m.Session(title="t", repo=str(tmp_path), contract=contract)
        ledger.put(session)
        ex = ProcessExecutor(ledger, session, None)
        run = ex.run(m.Run(session_id=session.id, arm="baseline", workload="t", block=1), tmp_path)
        ex.close()
        stored = ledger.get(m.Run, run.id)
    assert run.status is status, (run.status, run.error)
    assert m.Run.model_validate_json(run.model_dump_json()) == run
    assert stored == run
    for name, field in m.Run.model_fields.items():  # each value has its field's type
        value = getattr(run, name)
        assert value is None or field.annotation is None or _has_type(value, field.annotation), (
            name,
            value,
        )


def _has_type(value: object, annotation: object) -> bool:
    from pydantic import TypeAdapter

    try:
        return TypeAdapter(annotation).validate_python(value, strict=True) == value
    except Exception:  # any refusal is the answer
        return False
