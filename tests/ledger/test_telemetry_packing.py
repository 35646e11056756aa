"""Telemetry is stored packed per (session, run); the `telemetry` view unpacks it for SQL."""

from __future__ import annotations

import math

from ledger import Ledger
from ledger.store import TELEMETRY_COLUMNS
from session import models as m


def _row(session: str, run: str | None, t_us: int, sm: float) -> tuple[object, ...]:
    values: dict[str, object] = {"run_id": run, "t_us": t_us, "source": "nvml", "gpu": 0}
    values["sm_clock_mhz"] = sm
    return (session, *(values.get(c) for c in TELEMETRY_COLUMNS))


def test_one_batch_spanning_runs_is_split_and_reads_back_in_time_order(tmp_path):
    ledger = Ledger.open(tmp_path / "l.db")
    rows = [_row("s", "r1", 3, 1.0), _row("s", None, 1, 2.0), _row("s", "r1", 2, 3.0)]
    assert ledger.insert_samples(rows) == 3
    assert ledger.query("SELECT run_id, n FROM telemetry_batches ORDER BY id") == [
        {"run_id": "r1", "n": 2},
        {"run_id": None, "n": 1},
    ]
    assert [s.t_us for s in ledger.samples(session_id="s")] == [1, 2, 3]
    assert [s.sm_clock_mhz for s in ledger.samples(run_id="r1")] == [3.0, 1.0]
    assert ledger.counts()["telemetry"] == 3


def test_the_view_gives_one_sql_row_per_sample_with_named_columns(tmp_path):
    ledger = Ledger.open(tmp_path / "l.db")
    ledger.insert_samples([_row("s", "r1", t, 1000.0 + t) for t in range(5)])
    sql = "SELECT run_id, t_us, source, gpu, sm_clock_mhz FROM telemetry WHERE t_us >= 3"
    rows = ledger.query(sql + " ORDER BY t_us")
    assert rows == [
        {"run_id": "r1", "t_us": 3, "source": "nvml", "gpu": 0, "sm_clock_mhz": 1003.0},
        {"run_id": "r1", "t_us": 4, "source": "nvml", "gpu": 0, "sm_clock_mhz": 1004.0},
    ]


def test_non_finite_readings_are_stored_as_missing_and_the_view_still_reads(tmp_path):
    ledger = Ledger.open(tmp_path / "l.db")
    ledger.insert_samples([_row("s", "r", 1, math.nan), _row("s", "r", 2, math.inf)])
    assert [s.sm_clock_mhz for s in ledger.samples(run_id="r")] == [None, None]
    assert ledger.query("SELECT COUNT(*) AS n FROM telemetry") == [{"n": 2}]


def test_models_and_tuples_pack_alike(tmp_path):
    ledger = Ledger.open(tmp_path / "l.db")
    sample = m.TelemetrySample(session_id="s", run_id="r", t_us=9, source="host", cpu_percent=12.5)
    ledger.insert_samples([sample])
    assert ledger.samples(run_id="r") == [sample]
