"""The hook through which telemetry watches each run and judges whether to trust it.

The engine calls `run_started` when a run's process has started and `run_finished` when
it has ended; the observation says whether the run can be trusted. An UNTRUSTED run is
quarantined (kept in the ledger, excluded from statistics) and its block is run again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from measure.vocabulary import Trust


@dataclass
class RunObservation:
    trust: Trust = Trust.UNKNOWN
    reasons: list[str] = field(default_factory=list)
    deltas: dict[str, Any] = field(default_factory=dict)  # energy, violation time, ECC, ...


class RunMonitor(Protocol):
    def run_started(self, run_id: str, pid: int | None) -> None: ...

    def run_finished(self, run_id: str) -> RunObservation: ...


class NullMonitor:
    """No telemetry at all: never 'clean' without evidence."""

    def run_started(self, run_id: str, pid: int | None) -> None:
        return None

    def run_finished(self, run_id: str) -> RunObservation:
        return RunObservation(trust=Trust.UNKNOWN, reasons=["no telemetry was recorded"])
