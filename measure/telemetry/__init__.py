"""GPU and host telemetry: samplers, replayed scenarios, and the per-run trust verdict.

`make_monitor(sink, session_id)` gives the engine's `RunMonitor`; `judge` is the verdict;
`Sample` carries the ledger's telemetry columns. Nothing here imports textual, session or
ledger.

The names are loaded on first use: the ledger needs only the sample's columns
(`backend`), and every command line opens a ledger; the monitor brings the sampler, NVML
and psutil, which only measuring commands use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from measure.lazy_names import loader

if TYPE_CHECKING:
    from measure.telemetry.backend import (
        COLUMNS,
        BackendUnavailable,
        Counters,
        DeviceInfo,
        GpuBackend,
        Sample,
        decode_reasons,
    )
    from measure.telemetry.monitor import TelemetryMonitor, make_monitor
    from measure.telemetry.trust import Trust, judge

_WHERE = {
    "COLUMNS": "measure.telemetry.backend",
    "BackendUnavailable": "measure.telemetry.backend",
    "Counters": "measure.telemetry.backend",
    "DeviceInfo": "measure.telemetry.backend",
    "GpuBackend": "measure.telemetry.backend",
    "Sample": "measure.telemetry.backend",
    "decode_reasons": "measure.telemetry.backend",
    "TelemetryMonitor": "measure.telemetry.monitor",
    "make_monitor": "measure.telemetry.monitor",
    "Trust": "measure.telemetry.trust",
    "judge": "measure.telemetry.trust",
}


__getattr__ = loader(__name__, _WHERE)


__all__ = [
    "COLUMNS",
    "BackendUnavailable",
    "Counters",
    "DeviceInfo",
    "GpuBackend",
    "Sample",
    "TelemetryMonitor",
    "Trust",
    "decode_reasons",
    "judge",
    "make_monitor",
]
