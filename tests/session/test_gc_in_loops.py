"""The baseline, round and compare loops run with the heap of before frozen (a full
collection walks only what the loop made: 18 ms a time in a round of `true`, once every
few hundred runs) and give it back when they end; each run's clock runs with the collector
off (measure.gc_control)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from ledger import Ledger
from measure.monitor import RunObservation
from measure.runner import run_command
from session import conduct as c
from session import models as m
from session.conduct.compare import compare


class Watching:
    """A monitor that notes, at each run's start, the collector's state."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, bool]] = []

    def run_started(self, run_id: str, pid: int | None) -> None:
        self.seen.append((gc.get_freeze_count(), gc.isenabled()))

    def run_finished(self, run_id: str) -> RunObservation:
        return RunObservation(trust=m.Trust.CLEAN, reasons=[])


@pytest.mark.usefixtures("unfrozen_heap")
def test_baseline_and_round_run_on_a_frozen_heap_with_the_collector_off(
    tmp_path: Path, make_repo: Any
) -> None:
    assert gc.isenabled() and gc.get_freeze_count() == 0
    repo = make_repo()
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        session = m.Session(
            title="t",
            repo=str(repo),
            contract=m.Contract(workloads=[m.Workload(name="t", command="true")]),
        )
        ledger.put(session)
        watching = Watching()
        c.record_baseline(ledger, session, runs=4, warmup=0, monitor=watching)
        c.add_variant(ledger, session, "same", ref="HEAD")
        c.run_round(ledger, session, min_blocks=2, max_blocks=2, seed=1, monitor=watching)
    assert len(watching.seen) >= 4 + 2 * 3
    assert all(frozen > 0 and not on for frozen, on in watching.seen), watching.seen
    assert gc.isenabled() and gc.get_freeze_count() == 0


@pytest.mark.usefixtures("unfrozen_heap")
def test_compare_runs_on_a_frozen_heap(tmp_path: Path) -> None:
    frozen: list[int] = []

    def runner(*args: Any, **kw: Any) -> Any:
        frozen.append(gc.get_freeze_count())
        return run_command(*args, **kw)

    compare(["true", "true"], min_blocks=2, max_blocks=2, warmup=0, cwd=tmp_path, run=runner)
    assert frozen and all(f > 0 for f in frozen)
    assert gc.get_freeze_count() == 0
