"""GPU and host telemetry: samplers, replayed scenarios, and the per-run trust verdict.

`make_monitor(sink, session_id)` gives the engine's `RunMonitor`; `judge` is the verdict;
`Sample` carries the ledger's telemetry columns. Nothing here imports textual, session or
ledger.
"""

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
