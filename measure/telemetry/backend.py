"""What every telemetry backend shares: the sample, the device facts, the interface.

A backend reads the GPUs (NVML, or a replay of a recorded scenario). The host backend
(psutil) is separate and always on. Samples carry exactly the ledger's telemetry columns,
in the ledger's order, plus an `extra` dict that is shown live but never stored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

# Clock-event reason bits (NVML's nvmlClocksEventReason*), with the words we show.
REASON_BITS: tuple[tuple[int, str], ...] = (
    (0x1, "GPU idle"),
    (0x2, "application clocks setting"),
    (0x4, "SW power cap"),
    (0x8, "HW slowdown"),
    (0x10, "sync boost"),
    (0x20, "SW thermal slowdown"),
    (0x40, "HW thermal slowdown"),
    (0x80, "HW power brake slowdown"),
    (0x100, "display clock setting"),
)
IDLE = 0x1
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
SW_THERMAL = 0x20
HW_THERMAL = 0x40
HW_POWER_BRAKE = 0x80


def decode_reasons(mask: int | None) -> list[str]:
    """Clock-event reasons in words; unknown bits as hex. None: not readable."""
    if mask is None:
        return ["unreadable"]
    words = [name for bit, name in REASON_BITS if mask & bit]
    known = 0
    for bit, _ in REASON_BITS:
        known |= bit
    rest = mask & ~known
    if rest:
        words.append(hex(rest))
    return words or ["none"]


def now_us() -> int:
    return time.time_ns() // 1000


@dataclass(slots=True)
class Sample:
    """One reading of one GPU (source nvml/replay) or of the host (source host).

    The field order up to `load1` is the ledger's telemetry column order (less session_id).
    """

    run_id: str | None
    t_us: int
    source: str = "host"
    gpu: int | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    clock_reasons: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: float | None = None
    util_gpu: float | None = None
    util_mem: float | None = None
    mem_used_bytes: int | None = None
    pcie_tx_kbps: float | None = None
    pcie_rx_kbps: float | None = None
    pstate: int | None = None
    cpu_percent: float | None = None
    rss_bytes: int | None = None
    load1: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # shown live, not stored

    def row(self, session_id: str | None) -> tuple[Any, ...]:
        """(session_id, *COLUMNS): what `Ledger.insert_samples` takes."""
        return (session_id, *(getattr(self, c) for c in COLUMNS))

    def as_dict(self) -> dict[str, Any]:
        d = {c: getattr(self, c) for c in COLUMNS}
        if self.extra:
            d.update(self.extra)
        return d


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Sample) if f.name != "extra")

# The per-sample GPU fields a backend reads (the columns between gpu and cpu_percent).
GPU_FIELDS: tuple[str, ...] = (
    "sm_clock_mhz",
    "mem_clock_mhz",
    "clock_reasons",
    "power_w",
    "power_limit_w",
    "temperature_c",
    "util_gpu",
    "util_mem",
    "mem_used_bytes",
    "pcie_tx_kbps",
    "pcie_rx_kbps",
    "pstate",
)


@dataclass
class DeviceInfo:
    """What does not change while we watch a GPU."""

    index: int  # NVML index (as nvidia-smi shows it)
    uuid: str = ""
    name: str = ""
    max_sm_clock_mhz: float | None = None
    max_mem_clock_mhz: float | None = None
    mem_total_bytes: int | None = None
    mig: bool | None = None  # MIG mode on; None: not readable

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "uuid": self.uuid,
            "name": self.name,
            "max_sm_clock_mhz": self.max_sm_clock_mhz,
            "max_mem_clock_mhz": self.max_mem_clock_mhz,
            "mem_total_bytes": self.mem_total_bytes,
            "mig": self.mig,
        }


@dataclass
class Counters:
    """Cumulative per-GPU counters read before and after a run (None: not readable)."""

    energy_mj: int | None = None
    violation_power_ns: int | None = None
    violation_thermal_ns: int | None = None
    ecc_uncorrected: int | None = None


class BackendUnavailable(Exception):
    """The GPU backend cannot run here; str() is the reason in one line (NVML's words)."""


class GpuBackend(Protocol):
    """A source of GPU readings. Every method is called from the one owner thread."""

    source: str  # "nvml" | "replay"

    def open(self) -> list[DeviceInfo]:
        """Initialise and list the watched GPUs; raises BackendUnavailable with the reason."""
        ...

    def advance(self, run_seq: int | None, tick: int) -> None:
        """Where the sampler stands (replays follow their script; hardware ignores it)."""
        ...

    def read(self, t_us: int, run_id: str | None, pcie: bool = True) -> list[Sample]:
        """One sample per GPU. A lost GPU gives a sample of NULLs and appears in `lost`."""
        ...

    def counters(self) -> dict[int, Counters]: ...

    def processes(self) -> dict[int, list[int]]:
        """Compute processes (pids) on each GPU; a GPU that cannot say is left out."""
        ...

    @property
    def lost(self) -> set[int]: ...

    @property
    def unsupported(self) -> dict[int, set[str]]: ...

    def close(self) -> None: ...
