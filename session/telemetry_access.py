"""The machine's telemetry as a front end reaches it: through the session layer.

The app's panel and the `gpuopt telemetry` command sample, decode and replay with these
names only, so `tui` imports nothing of `measure`.
"""

from __future__ import annotations

from measure.monitor import NullMonitor
from measure.telemetry import BackendUnavailable, decode_reasons, make_monitor
from measure.telemetry.replay import load_scenario, scenario_names

__all__ = [
    "BackendUnavailable",
    "NullMonitor",
    "decode_reasons",
    "load_scenario",
    "make_monitor",
    "scenario_names",
]
