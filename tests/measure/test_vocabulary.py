"""The measurement vocabulary lives once, in measure.vocabulary: the telemetry package, the
run monitor and the session models use those very enums, not copies or bare strings."""

from __future__ import annotations

from pathlib import Path

from ledger import Ledger
from ledger.store import TELEMETRY_COLUMNS
from measure import vocabulary as v
from measure.monitor import NullMonitor, RunObservation
from measure.telemetry import COLUMNS, Sample, judge, make_monitor
from measure.telemetry import Trust as TelemetryTrust
from session import models as m


def test_the_telemetry_trust_is_the_vocabulary_one() -> None:
    assert TelemetryTrust is v.Trust
    trust, reasons = judge([], {"nvml": "no NVML here"})
    assert trust is v.Trust.UNKNOWN and reasons


def test_a_run_observation_carries_the_enum() -> None:
    assert RunObservation().trust is v.Trust.UNKNOWN
    assert NullMonitor().run_finished("r").trust is v.Trust.UNKNOWN


def test_a_replayed_run_is_judged_in_the_enum() -> None:
    monitor = make_monitor(None, "sess", scenario="hw-slowdown-mid-run", start=False)
    observed = []
    for run in ("r1", "r2", "r3"):
        monitor.run_started(run, None)
        monitor.tick()
        monitor.tick()
        observed.append(monitor.run_finished(run).trust)
    monitor.close()
    assert all(type(t) is v.Trust for t in observed)
    assert v.Trust.UNTRUSTED in observed


def test_the_session_models_re_export_the_very_enums() -> None:
    assert m.Trust is v.Trust and m.Verdict is v.Verdict and m.RunStatus is v.RunStatus
    assert m.Run.model_fields["trust"].annotation is v.Trust


def test_the_ledger_stores_the_telemetry_sample_columns(tmp_path: Path) -> None:
    assert TELEMETRY_COLUMNS == COLUMNS
    # the session model of a stored sample is measure's Sample plus its session
    assert tuple(m.TelemetrySample.model_fields) == ("session_id", *COLUMNS)
    with Ledger.open(tmp_path / "l.db") as ledger:
        sample = Sample(run_id="r1", t_us=1, source="replay", gpu=0, sm_clock_mhz=1410.0)
        ledger.insert_samples([sample.row("s1")])
        (back,) = ledger.samples(run_id="r1")
    assert back.sm_clock_mhz == 1410.0 and back.session_id == "s1" and back.gpu == 0
