"""The NVML backend (nvidia-ml-py's `pynvml` module).

nvmlInit once per process and nvmlShutdown at exit; the sampler's owner thread makes every
call. A field NVML does not support on a GPU is stored NULL and never asked again; a GPU
that is lost is read no more and reported lost. The same code reads a replay (a scripted
stand-in for `pynvml`), so tests exercise these paths exactly.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable
from typing import Any

from measure.telemetry.backend import (
    BackendUnavailable,
    Counters,
    DeviceInfo,
    Sample,
)

# NVML return codes (as in nvml.h; pynvml has the same numbers).
NOT_SUPPORTED = 3
NO_PERMISSION = 4
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
RESET_REQUIRED = 16
GPU_NOT_FOUND = 28
_NEVER_AGAIN = {NOT_SUPPORTED, FUNCTION_NOT_FOUND, NO_PERMISSION}
_LOST = {GPU_IS_LOST, RESET_REQUIRED, GPU_NOT_FOUND}

_init_lock = threading.Lock()
_initialised = False  # the real library: nvmlInit once per process, nvmlShutdown at exit


def _init_process_wide(lib: Any) -> None:
    global _initialised
    with _init_lock:
        if _initialised:
            return
        lib.nvmlInit()
        _initialised = True
        _shutdown_lib.append(lib)


_shutdown_lib: list[Any] = []


@atexit.register  # registered at import, so it runs after every monitor has closed
def _at_exit() -> None:
    if _shutdown_lib:
        _shutdown_process_wide(_shutdown_lib[0])


def _shutdown_process_wide(lib: Any) -> None:
    global _initialised
    with _init_lock:
        if not _initialised:
            return
        _initialised = False
        try:
            lib.nvmlShutdown()
        except Exception:
            pass


def _load_pynvml() -> Any:
    try:
        import pynvml  # lazy: loads the NVML library; a box without it still samples the host
    except ImportError as exc:  # nvidia-ml-py not installed
        raise BackendUnavailable(f"nvidia-ml-py is not installed ({exc})") from None
    return pynvml


def nvml_error_text(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


class _Lost(Exception):
    pass


def visible_selection(env: str | None) -> list[str] | None:
    """CUDA_VISIBLE_DEVICES as a list of entries; None when every GPU is visible.

    Like CUDA, the list stops at the first entry that is empty or negative.
    """
    if env is None:
        return None
    out: list[str] = []
    for part in env.split(","):
        part = part.strip()
        if not part or part.startswith("-"):
            break
        out.append(part)
    return out


class NvmlBackend:
    """GPU readings through NVML, for every GPU or those in CUDA_VISIBLE_DEVICES.

    Indices in CUDA_VISIBLE_DEVICES are taken as NVML indices (set
    CUDA_DEVICE_ORDER=PCI_BUS_ID for CUDA to agree); UUIDs and UUID prefixes work too.
    """

    source = "nvml"

    def __init__(self, lib: Any | None = None, visible: str | None = None, use_env: bool = True):
        self._lib = lib
        self._visible = (
            visible
            if visible is not None or not use_env
            else (os.environ.get("CUDA_VISIBLE_DEVICES"))
        )
        self._handles: dict[int, Any] = {}
        self._devices: list[DeviceInfo] = []
        self._unsupported: dict[int, set[str]] = {}
        self._lost: set[int] = set()
        self._reasons_fallback: dict[int, bool] = {}
        self._open = False
        self._process_wide = lib is None  # the real pynvml, shared by the whole process
        self.calls: dict[str, int] = {}  # how often each NVML function was called

    # ------------------------------------------------------------------ life

    @property
    def lib(self) -> Any:
        if self._lib is None:
            self._lib = _load_pynvml()
        return self._lib

    def open(self) -> list[DeviceInfo]:
        lib = self.lib
        try:
            if self._process_wide:
                _init_process_wide(lib)
            else:
                lib.nvmlInit()
            self._open = True
            count = lib.nvmlDeviceGetCount()
        except lib.NVMLError as exc:
            raise BackendUnavailable(nvml_error_text(exc)) from None
        except OSError as exc:
            raise BackendUnavailable(f"NVML could not be loaded ({exc})") from None
        if count == 0:
            raise BackendUnavailable("NVML found no GPU (0 devices)")
        wanted = visible_selection(self._visible)
        indices = list(range(count))
        if wanted is not None:
            indices = self._select(count, wanted)
            if not indices:
                raise BackendUnavailable(
                    f"CUDA_VISIBLE_DEVICES={self._visible!r} selects none of the {count} GPUs"
                )
        for i in indices:
            try:
                handle = lib.nvmlDeviceGetHandleByIndex(i)
            except lib.NVMLError:
                continue
            self._handles[i] = handle
            self._unsupported[i] = set()
            self._devices.append(self._info(i, handle))
        if not self._devices:
            raise BackendUnavailable("NVML lists GPUs but none could be opened")
        return list(self._devices)

    def _select(self, count: int, wanted: list[str]) -> list[int]:
        uuids: dict[int, str] = {}
        for i in range(count):
            try:
                uuids[i] = _text(self.lib.nvmlDeviceGetUUID(self.lib.nvmlDeviceGetHandleByIndex(i)))
            except self.lib.NVMLError:
                uuids[i] = ""
        out: list[int] = []
        for entry in wanted:
            if entry.isdigit():
                i = int(entry)
                if i >= count:
                    break
                out.append(i)
                continue
            matches = [i for i, u in uuids.items() if u and u.startswith(entry)]
            if len(matches) != 1 and entry.startswith("MIG-"):
                parent = self._mig_parent(entry)
                matches = [parent] if parent is not None else []
            if len(matches) != 1:
                break
            out.append(matches[0])
        return list(dict.fromkeys(out))

    def _mig_parent(self, mig_uuid: str) -> int | None:
        """The NVML index of the GPU a MIG instance (by its UUID) lives on."""
        lib = self.lib
        try:
            mig = lib.nvmlDeviceGetHandleByUUID(mig_uuid)
            parent = lib.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig)
            return int(lib.nvmlDeviceGetIndex(parent))
        except (lib.NVMLError, AttributeError):
            return None

    def close(self) -> None:
        """Stop reading. The real library is shut down once, at process exit."""
        if not self._open:
            return
        self._open = False
        if self._process_wide:
            return
        try:
            self.lib.nvmlShutdown()
        except Exception:
            pass

    def advance(self, run_seq: int | None, tick: int) -> None:
        advance = getattr(self._lib, "gpuopt_advance", None)
        if advance is not None:
            advance(run_seq, tick)

    @property
    def devices(self) -> list[DeviceInfo]:
        return list(self._devices)

    @property
    def lost(self) -> set[int]:
        return set(self._lost)

    @property
    def unsupported(self) -> dict[int, set[str]]:
        return {i: set(s) for i, s in self._unsupported.items()}

    # ------------------------------------------------------------------ calls

    def _call(self, gpu: int, key: str, fn: Callable[..., Any], *args: Any) -> Any:
        """One NVML call for one field; None when unsupported or failing this time."""
        if key in self._unsupported[gpu]:
            return None
        name = getattr(fn, "__name__", key)
        self.calls[name] = self.calls.get(name, 0) + 1
        try:
            return fn(*args)
        except self.lib.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code in _LOST:
                raise _Lost() from None
            if code in _NEVER_AGAIN:
                self._unsupported[gpu].add(key)
            return None

    def _info(self, i: int, h: Any) -> DeviceInfo:
        lib = self.lib
        info = DeviceInfo(index=i)
        try:
            info.name = _text(self._call(i, "name", lib.nvmlDeviceGetName, h) or "")
            info.uuid = _text(self._call(i, "uuid", lib.nvmlDeviceGetUUID, h) or "")
            info.max_sm_clock_mhz = _num(
                self._call(i, "max_sm_clock", lib.nvmlDeviceGetMaxClockInfo, h, lib.NVML_CLOCK_SM)
            )
            info.max_mem_clock_mhz = _num(
                self._call(i, "max_mem_clock", lib.nvmlDeviceGetMaxClockInfo, h, lib.NVML_CLOCK_MEM)
            )
            mem = self._call(i, "mem_total", lib.nvmlDeviceGetMemoryInfo, h)
            info.mem_total_bytes = int(mem.total) if mem is not None else None
            mig = self._call(i, "mig", lib.nvmlDeviceGetMigMode, h)
            if mig is not None:
                info.mig = bool(mig[0])
            elif "mig" in self._unsupported[i]:
                info.mig = False  # a GPU without MIG support cannot have it on
        except _Lost:
            self._lost.add(i)
        return info

    def read(self, t_us: int, run_id: str | None, pcie: bool = True) -> list[Sample]:
        out: list[Sample] = []
        for info in self._devices:
            i = info.index
            s = Sample(run_id=run_id, t_us=t_us, source=self.source, gpu=i)
            if i in self._lost:
                s.extra["lost"] = True
                out.append(s)
                continue
            try:
                self._read_into(s, i, self._handles[i], pcie)
            except _Lost:
                self._lost.add(i)
                s = Sample(run_id=run_id, t_us=t_us, source=self.source, gpu=i)
                s.extra["lost"] = True
            out.append(s)
        return out

    def _read_into(self, s: Sample, i: int, h: Any, pcie: bool) -> None:
        lib = self.lib
        s.sm_clock_mhz = _num(
            self._call(i, "sm_clock_mhz", lib.nvmlDeviceGetClockInfo, h, lib.NVML_CLOCK_SM)
        )
        s.mem_clock_mhz = _num(
            self._call(i, "mem_clock_mhz", lib.nvmlDeviceGetClockInfo, h, lib.NVML_CLOCK_MEM)
        )
        s.clock_reasons = self._reasons(i, h)
        mw = self._call(i, "power_w", lib.nvmlDeviceGetPowerUsage, h)
        s.power_w = mw / 1000.0 if mw is not None else None
        mw = self._call(i, "power_limit_w", lib.nvmlDeviceGetEnforcedPowerLimit, h)
        s.power_limit_w = mw / 1000.0 if mw is not None else None
        s.temperature_c = _num(
            self._call(
                i, "temperature_c", lib.nvmlDeviceGetTemperature, h, lib.NVML_TEMPERATURE_GPU
            )
        )
        util = self._call(i, "utilization", lib.nvmlDeviceGetUtilizationRates, h)
        if util is not None:
            s.util_gpu, s.util_mem = float(util.gpu), float(util.memory)
        mem = self._call(i, "mem_used_bytes", lib.nvmlDeviceGetMemoryInfo, h)
        if mem is not None:
            s.mem_used_bytes = int(mem.used)
        if pcie:  # each PCIe call samples the bus for ~20 ms: the sampler asks at most 1 Hz
            s.pcie_tx_kbps = _num(
                self._call(
                    i,
                    "pcie_tx_kbps",
                    lib.nvmlDeviceGetPcieThroughput,
                    h,
                    lib.NVML_PCIE_UTIL_TX_BYTES,
                )
            )
            s.pcie_rx_kbps = _num(
                self._call(
                    i,
                    "pcie_rx_kbps",
                    lib.nvmlDeviceGetPcieThroughput,
                    h,
                    lib.NVML_PCIE_UTIL_RX_BYTES,
                )
            )
        p = self._call(i, "pstate", lib.nvmlDeviceGetPerformanceState, h)
        s.pstate = int(p) if p is not None else None

    def _reasons(self, i: int, h: Any) -> int | None:
        lib = self.lib
        if not self._reasons_fallback.get(i):
            fn = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
            if fn is not None:
                value = self._call(i, "clock_reasons_event", fn, h)
                if value is not None:
                    return int(value)
                if "clock_reasons_event" not in self._unsupported[i]:
                    return None  # a passing failure: try the same call next time
            self._reasons_fallback[i] = True
        value = self._call(i, "clock_reasons", lib.nvmlDeviceGetCurrentClocksThrottleReasons, h)
        return int(value) if value is not None else None

    def counters(self) -> dict[int, Counters]:
        lib = self.lib
        out: dict[int, Counters] = {}
        for info in self._devices:
            i = info.index
            if i in self._lost:
                continue
            h = self._handles[i]
            c = Counters()
            try:
                c.energy_mj = _int(
                    self._call(i, "energy", lib.nvmlDeviceGetTotalEnergyConsumption, h)
                )
                v = self._call(
                    i,
                    "violation_power",
                    lib.nvmlDeviceGetViolationStatus,
                    h,
                    lib.NVML_PERF_POLICY_POWER,
                )
                c.violation_power_ns = int(v.violationTime) if v is not None else None
                v = self._call(
                    i,
                    "violation_thermal",
                    lib.nvmlDeviceGetViolationStatus,
                    h,
                    lib.NVML_PERF_POLICY_THERMAL,
                )
                c.violation_thermal_ns = int(v.violationTime) if v is not None else None
                c.ecc_uncorrected = _int(
                    self._call(
                        i,
                        "ecc",
                        lib.nvmlDeviceGetTotalEccErrors,
                        h,
                        lib.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                        lib.NVML_VOLATILE_ECC,
                    )
                )
            except _Lost:
                self._lost.add(i)
                continue
            out[i] = c
        return out

    def processes(self) -> dict[int, list[int]]:
        lib = self.lib
        out: dict[int, list[int]] = {}
        for info in self._devices:
            i = info.index
            if i in self._lost:
                continue
            try:
                procs = self._call(
                    i, "processes", lib.nvmlDeviceGetComputeRunningProcesses, self._handles[i]
                )
            except _Lost:
                self._lost.add(i)
                continue
            if procs is not None:
                out[i] = [int(p.pid) for p in procs]
        return out


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _num(value: Any) -> float | None:
    return float(value) if value is not None else None


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None
