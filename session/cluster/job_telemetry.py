"""What the telemetry panel shows while a Slurm job measures: the node's samples, read
from the job's journal, and where the job stands (PENDING, RUNNING on which node and GPU).

The rule of which samples to show is the one the app applies to its own sampler: one
sample per tick, the watched GPU's readings with the host's. On the node the watched GPU
is the job's (the journal's start line names it); the login node's own GPUs, which the
job does not use, are not shown meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ledger.store import TELEMETRY_COLUMNS
from measure import slurm
from session import models as m

__all__ = ["JobFeed", "TelemetryFn", "job_words", "samples_of", "shown"]

# (samples to show, the job's line) -> None; called from the following thread.
TelemetryFn = Callable[[list[m.TelemetrySample], str], None]
_NAMES = ("session_id", *TELEMETRY_COLUMNS)
_FIELDS = set(m.TelemetrySample.model_fields)


def samples_of(entry: dict[str, Any]) -> list[m.TelemetrySample]:
    """A journal's `samples` line as samples (a row this version cannot read is left out)."""
    out = []
    for row in entry.get("samples") or []:
        values = {k: v for k, v in zip(_NAMES, row, strict=False) if v is not None and k in _FIELDS}
        try:
            out.append(m.TelemetrySample(**values))
        except ValueError:
            continue
    return out


def shown(samples: Iterable[m.TelemetrySample], gpu: int | None) -> list[m.TelemetrySample]:
    """One sample per tick: GPU `gpu`'s readings (the lowest index seen when None) merged
    with the host's, in time order; samples of other GPUs are not shown."""
    samples = list(samples)
    if gpu is None:
        gpu = min((s.gpu for s in samples if s.gpu is not None), default=None)
    ticks: dict[int, dict[str, Any]] = {}
    for s in sorted(samples, key=lambda s: s.t_us):
        if s.gpu is not None and s.gpu != gpu:
            continue
        merged = ticks.setdefault(s.t_us, {})
        for k, v in s.model_dump().items():
            if v is not None and k not in ("session_id", "run_id"):
                merged.setdefault(k, v)
        if s.gpu is not None:
            merged["source"] = s.source  # the GPU's source (nvml, replay) labels the tick
    return [m.TelemetrySample(**ticks[t]) for t in sorted(ticks)]


def job_words(job_id: str, state: slurm.JobState | None, place: dict[str, Any]) -> str:
    """The job's line above the panel's figures."""
    if state is None:
        return f"Slurm job {job_id}: submitted" if not place else f"Slurm job {job_id}: ended"
    words = f"Slurm job {job_id} {state.state}"
    if state.state == "PENDING":
        why = state.reason if state.reason not in ("", "None") else ""
        return words + (f" ({why})" if why else "") + ": no samples until it runs"
    node = place.get("node") or state.node
    if node:
        words += f" on {node}"
    if place.get("gpu_uuid"):
        words += f", GPU {place.get('gpu_index', '?')} {place['gpu_uuid']}"
    elif place.get("gpu_note"):
        words += f" ({place['gpu_note']})"
    return words


class JobFeed:
    """Follows one job's journal lines and state for the panel (`send`)."""

    def __init__(self, job_id: str, send: TelemetryFn):
        self.job_id, self.send = job_id, send
        self.state: slurm.JobState | None = None
        self.place: dict[str, Any] = {}

    @property
    def words(self) -> str:
        return job_words(self.job_id, self.state, self.place)

    def on_state(self, state: slurm.JobState | None) -> None:
        self.state = state
        self.send([], self.words)

    def on_entry(self, entry: dict[str, Any]) -> None:
        kind = entry.get("kind")
        if kind == "start":
            self.place = dict(entry.get("place") or {})
            self.send([], self.words)
        elif kind == "samples":
            index = self.place.get("gpu_index")
            gpu = int(index) if isinstance(index, str) and index.isdigit() else None
            found = shown(samples_of(entry), gpu)
            if found:
                self.send(found, self.words)
