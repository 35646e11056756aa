"""Where the telemetry panel's samples come from: NVML and the host, or a replay.

One thread owns every NVML call of the UI process (the app runs `LiveFeed.loop` in a thread
worker); the screens only ever see `TelemetrySample`s. A replay is a fixed list of samples,
for repeatable pictures and tests. No textual import here.
"""

from __future__ import annotations

import importlib
import json
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from session import models as m


class HostProbe:
    """System CPU and memory through psutil."""

    def __init__(self) -> None:
        import psutil

        self._ps = psutil
        psutil.cpu_percent(None)  # prime: the first call always says 0

    def read(self, sample: dict[str, Any]) -> None:
        ps = self._ps
        sample["cpu_percent"] = ps.cpu_percent(None)
        sample["rss_bytes"] = int(ps.virtual_memory().used)
        try:
            sample["load1"] = float(ps.getloadavg()[0])
        except (AttributeError, OSError):
            pass


class GpuProbe:
    """The few NVML fields the panel draws; `note` says why there are none."""

    def __init__(self, index: int = 0) -> None:
        self.note = ""
        self.name = ""
        self._nv: Any = None
        self._h: Any = None
        self._unsupported: set[str] = set()
        try:
            nv = importlib.import_module("pynvml")
        except ImportError:
            self.note = "no GPU telemetry: nvidia-ml-py is not installed"
            return
        try:
            nv.nvmlInit()
        except Exception as exc:
            self.note = f"no GPU: {_nvml_reason(exc)}"
            return
        try:
            if nv.nvmlDeviceGetCount() <= index:
                self.note = "no GPU: NVML sees no device"
                nv.nvmlShutdown()
                return
            self._h = nv.nvmlDeviceGetHandleByIndex(index)
            name = nv.nvmlDeviceGetName(self._h)
            self.name = name.decode() if isinstance(name, bytes) else str(name)
            self._nv = nv
        except Exception as exc:
            self.note = f"no GPU: {_nvml_reason(exc)}"

    @property
    def ok(self) -> bool:
        return self._nv is not None

    def _get(self, key: str, fn: Callable[[], Any]) -> Any:
        if key in self._unsupported:
            return None
        try:
            return fn()
        except Exception:
            self._unsupported.add(key)  # not asked again
            return None

    def read(self, sample: dict[str, Any]) -> None:
        nv, h = self._nv, self._h
        if nv is None:
            return
        util = self._get("util", lambda: nv.nvmlDeviceGetUtilizationRates(h))
        if util is not None:
            sample["util_gpu"], sample["util_mem"] = float(util.gpu), float(util.memory)
        sample["sm_clock_mhz"] = self._get(
            "sm", lambda: float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
        )
        sample["mem_clock_mhz"] = self._get(
            "memclk", lambda: float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))
        )
        p = self._get("power", lambda: nv.nvmlDeviceGetPowerUsage(h))
        sample["power_w"] = None if p is None else p / 1000.0
        lim = self._get("limit", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
        sample["power_limit_w"] = None if lim is None else lim / 1000.0
        sample["temperature_c"] = self._get(
            "temp", lambda: float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
        )
        mem = self._get("mem", lambda: nv.nvmlDeviceGetMemoryInfo(h))
        sample["mem_used_bytes"] = None if mem is None else int(mem.used)
        getter = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        if getter is not None:
            sample["clock_reasons"] = self._get("reasons", lambda: int(getter(h)))
        sample["source"] = "nvml"
        sample["gpu"] = 0

    def close(self) -> None:
        if self._nv is not None:
            try:
                self._nv.nvmlShutdown()
            except Exception:
                pass
            self._nv = None


def _nvml_reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if (
        "Driver Not Loaded" in text
        or "LibraryNotFound" in type(exc).__name__
        or "not found" in text.lower()
    ):
        return "the NVIDIA driver or its NVML library is not present"
    return text


class LiveFeed:
    """Samples at `busy_hz` while work runs and `idle_hz` otherwise, calling `emit`."""

    def __init__(
        self,
        emit: Callable[[m.TelemetrySample], None],
        *,
        gpu: bool = True,
        idle_hz: float = 1.0,
        busy_hz: float = 4.0,
    ) -> None:
        self.emit = emit
        self.gpu_enabled = gpu
        self.idle_hz = idle_hz
        self.busy_hz = busy_hz
        self.busy = False
        self.stop = threading.Event()
        self.note = ""
        self.name = ""

    def loop(self, on_ready: Callable[[str, str], None] | None = None) -> None:
        host = HostProbe()
        gpu = GpuProbe() if self.gpu_enabled else None
        if gpu is None:
            self.note = "no GPU telemetry (turned off)"
        else:
            self.note, self.name = gpu.note, gpu.name
        if on_ready is not None:
            on_ready(self.note, self.name)
        try:
            while not self.stop.is_set():
                fields: dict[str, Any] = {"t_us": int(time.time() * 1e6), "source": "host"}
                host.read(fields)
                if gpu is not None:
                    gpu.read(fields)
                self.emit(m.TelemetrySample(**fields))
                self.stop.wait(1.0 / (self.busy_hz if self.busy else self.idle_hz))
        finally:
            if gpu is not None:
                gpu.close()


def load_replay(path: str | Path) -> list[m.TelemetrySample]:
    """Samples from a JSON file: a list of sample objects, or {"samples": [...]}."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    rows: Iterable[dict[str, Any]] = data["samples"] if isinstance(data, dict) else data
    return [
        m.TelemetrySample(**{k: v for k, v in r.items() if k in m.TelemetrySample.model_fields})
        for r in rows
    ]


def demo_samples(n: int = 48, t0_us: int = 1_780_000_000_000_000) -> list[m.TelemetrySample]:
    """A fixed, plausible GPU trace (for pictures and tests): busy, one power-cap moment."""
    out = []
    for i in range(n):
        busy = i >= 6
        util = 97.0 + (i % 3) if busy else 2.0
        out.append(
            m.TelemetrySample(
                t_us=t0_us + i * 250_000,
                source="replay",
                gpu=0,
                util_gpu=util,
                sm_clock_mhz=1980.0 - (45.0 if i in (30, 31) else 0) if busy else 345.0,
                mem_clock_mhz=3201.0,
                clock_reasons=(0x4 if i in (30, 31) else 0) if busy else 0x1,
                power_w=(560.0 + (i % 5) * 12) if busy else 92.0,
                power_limit_w=700.0,
                temperature_c=(44.0 + min(i, 30) * 0.25) if busy else 38.0,
                mem_used_bytes=(12 if busy else 1) * 2**30,
                cpu_percent=(18.0 + (i % 4) * 3) if busy else 3.0,
                rss_bytes=int(21.5 * 2**30),
            )
        )
    return out
