"""TelemetryMonitor: the engine's `RunMonitor`, backed by the sampler.

    monitor = make_monitor(Ledger.open(path).insert_samples, session.id)
    monitor.run_started(run.id, pid)     # from the runner's on_start
    obs = monitor.run_finished(run.id)   # RunObservation(trust, reasons, deltas)
    monitor.close()                      # final flush; NVML is shut down at process exit

One monitor per process is the intent (one thread owns the GPU): the app makes one and
hands it to each baseline and round.
"""

from __future__ import annotations

import atexit
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from measure.monitor import RunObservation
from measure.telemetry.backend import DeviceInfo, GpuBackend, Sample
from measure.telemetry.chosen import ChosenGpu
from measure.telemetry.host import HostBackend

# (nvml registers its exit hook at import, before any monitor's: so it runs after them)
from measure.telemetry.nvml import NvmlBackend
from measure.telemetry.replay import ReplayBackend
from measure.telemetry.sampler import OnSample, RunRecord, Sampler, Sink, run_deltas
from measure.telemetry.trust import Trust, judge


class TelemetryMonitor:
    """Samples GPUs and host at 4 Hz during runs (1 Hz idle) and judges each run."""

    def __init__(
        self,
        sink: Sink | None,
        session_id: str | None,
        *,
        backend: GpuBackend | None,
        host: bool = True,
        on_sample: OnSample | None = None,
        run_hz: float = 4.0,
        idle_hz: float = 1.0,
        flush_s: float = 1.0,
        start: bool = True,
        gpu_off_reason: str = "GPU telemetry is off",
    ):
        self.sampler = Sampler(
            backend,
            HostBackend() if host else None,
            sink=sink,
            session_id=session_id,
            run_hz=run_hz,
            idle_hz=idle_hz,
            flush_s=flush_s,
            on_sample=on_sample,
            gpu_off_reason=gpu_off_reason,
        )
        self.last_record: RunRecord | None = None
        atexit.register(_close_at_exit, weakref.ref(self))  # pending rows reach the sink
        if start:
            self.sampler.start()

    # ------------------------------------------------------------------ RunMonitor

    def run_started(self, run_id: str, pid: int | None) -> None:
        self.sampler.begin_run(run_id, pid, wait=False)  # inside the run's timed wall clock

    def run_finished(self, run_id: str) -> RunObservation:
        record = self.sampler.end_run(run_id)
        self.last_record = record
        deltas = run_deltas(self.sampler, record)
        if record is None:
            return RunObservation(
                trust=Trust.UNKNOWN,
                reasons=["no telemetry was recorded for this run"],
                deltas=deltas,
            )
        trust, reasons = judge(record.samples, deltas)
        deltas["trust"] = trust.value
        return RunObservation(trust=trust, reasons=reasons, deltas=deltas)

    # ------------------------------------------------------------------ the rest

    @property
    def status(self) -> str:
        """ "ok", or why there is no GPU telemetry (NVML's words)."""
        self.sampler.wait_ready()
        return self.sampler.status

    @property
    def source(self) -> str:
        return self.sampler.source

    @property
    def devices(self) -> list[DeviceInfo]:
        self.sampler.wait_ready()
        return list(self.sampler.devices)

    @property
    def latest(self) -> list[Sample]:
        return list(self.sampler.latest)

    def tick(self) -> list[Sample]:
        return self.sampler.tick()

    def flush(self) -> None:
        self.sampler.flush()

    def close(self) -> None:
        self.sampler.close()

    def __enter__(self) -> TelemetryMonitor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_at_exit(ref: weakref.ref[TelemetryMonitor]) -> None:
    monitor = ref()
    if monitor is not None:
        monitor.close()


def make_monitor(
    sink: Sink | Callable[[list[Any]], Any] | None,
    session_id: str | None,
    *,
    scenario: str | Path | dict[str, Any] | None = None,
    gpu: bool = True,
    on_sample: OnSample | None = None,
    start: bool = True,
    gpu_choice: str | None = None,
    **kwargs: Any,
) -> TelemetryMonitor:
    """A monitor on NVML (or on a replay scenario, labelled "replay") plus the host.

    With no GPU it still runs: host samples only, every run judged "unknown" with NVML's
    reason. `gpu=False` turns GPU sampling off altogether. `gpu_choice` (a UUID or an
    index): watch that GPU alone (measure.telemetry.chosen).
    """
    backend: GpuBackend | None
    if scenario is not None:
        backend = ReplayBackend(scenario)
    elif gpu:
        backend = NvmlBackend()
    else:
        backend = None
    if backend is not None and gpu_choice:
        backend = ChosenGpu(backend, gpu_choice)
    return TelemetryMonitor(
        sink, session_id, backend=backend, on_sample=on_sample, start=start, **kwargs
    )
