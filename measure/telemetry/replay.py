"""Replay: scripted GPU scenarios played through the real NVML backend's code.

A scenario is a JSON file (see `scenarios/*.json`, shipped with the package):

```
{
  "name": "hw-slowdown-mid-run",           # how --replay and tests call it
  "title": "HW slowdown mid-run",
  "description": "...",
  "expect": ["clean", "untrusted", "clean"],  # trust of run 1, 2, 3... (the last repeats)
  "init_error": {"code": 12},              # optional: nvmlInit fails with this NVML code
  "devices": [{
      "index": 0, "uuid": "GPU-...", "name": "...",
      "max_sm_clock_mhz": 1980, "max_mem_clock_mhz": 3201, "mem_total_bytes": 150...,
      "mig": false,
      "idle": {<field>: value, ...},       # values between runs (sample column names)
      "busy": {<field>: value, ...},       # values during runs (over idle)
      "unsupported": ["pcie_tx_kbps", "energy", ...],  # NVML answers NotSupported
      "counters": {"energy_mj": 0, "violation_power_ns": 0,
                   "violation_thermal_ns": 0, "ecc_uncorrected": 0},
      "energy_mj_per_tick": 150000         # energy added on every sample during a run
  }],
  "events": [                              # applied in order, later ones win
      {"runs": [2], "ticks": [1, null], "gpu": 0, "set": {"clock_reasons": 8}},
      {"runs": [2], "ticks": [1, null], "gpu": 0, "add": {"ecc_uncorrected": 1}},
      {"runs": [3], "ticks": [2, null], "gpu": 0, "lost": true},
      {"runs": "all", "gpu": 0, "processes": [424242]}
  ]
}
```

`runs`: a list of run numbers (1 = the first run the monitor sees), "all" for every run,
"idle" for the time between runs; absent: always. `ticks`: [first, end) sample numbers
within the run (0 is the sample taken as the run starts; null end: to the run's end).
`add` increments a counter once, when its first tick is reached. Unsupported names are
the sample columns plus: utilization, clock_reasons_event (the newer call is missing, the
backend falls back), energy, violation_power, violation_thermal, ecc, processes, mig.
"""

from __future__ import annotations

import json
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from measure.telemetry.backend import BackendUnavailable
from measure.telemetry.nvml import FUNCTION_NOT_FOUND, GPU_IS_LOST, NOT_SUPPORTED, NvmlBackend

SCENARIO_PACKAGE = "measure.telemetry.scenarios"


def scenario_names() -> list[str]:
    root = resources.files(SCENARIO_PACKAGE)
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".json"))


def load_scenario(ref: str | Path | dict[str, Any]) -> dict[str, Any]:
    """A scenario by name (shipped with gpuopt), by path to a JSON file, or as a dict."""
    if isinstance(ref, dict):
        return ref
    path = Path(ref)
    if path.suffix == ".json" and path.exists():
        data = json.loads(path.read_text())
    else:
        name = str(ref).strip().lower().replace(" ", "-").replace("_", "-")
        res = resources.files(SCENARIO_PACKAGE) / f"{name}.json"
        if not res.is_file():
            known = ", ".join(scenario_names())
            raise BackendUnavailable(f"no replay scenario {str(ref)!r} (known: {known})")
        data = json.loads(res.read_text())
    if not isinstance(data, dict) or ("devices" not in data and "init_error" not in data):
        raise BackendUnavailable(f"{ref}: not a replay scenario (no 'devices')")
    return data


class _Struct:
    def __init__(self, **kw: Any):
        self.__dict__.update(kw)


def _pynvml() -> Any:
    import pynvml  # lazy: loads the NVML library, and nvidia-ml-py may be absent

    return pynvml


class ReplayLib:
    """A stand-in for the `pynvml` module that answers from a scenario."""

    NVML_CLOCK_SM: int
    NVML_CLOCK_MEM: int
    NVML_TEMPERATURE_GPU: int
    NVML_PCIE_UTIL_TX_BYTES: int
    NVML_PCIE_UTIL_RX_BYTES: int
    NVML_PERF_POLICY_POWER: int
    NVML_PERF_POLICY_THERMAL: int
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED: int
    NVML_VOLATILE_ECC: int

    def __init__(self, scenario: dict[str, Any]):
        nv = _pynvml()
        self.NVMLError = nv.NVMLError
        for name in (
            "NVML_CLOCK_SM", "NVML_CLOCK_MEM", "NVML_TEMPERATURE_GPU", "NVML_PCIE_UTIL_TX_BYTES",
            "NVML_PCIE_UTIL_RX_BYTES", "NVML_PERF_POLICY_POWER", "NVML_PERF_POLICY_THERMAL",
            "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_VOLATILE_ECC",
        ):  # fmt: skip
            setattr(self, name, getattr(nv, name))
        self.scenario = scenario
        self.devices: list[dict[str, Any]] = list(scenario.get("devices", []))
        self.events: list[dict[str, Any]] = list(scenario.get("events", []))
        self.run_seq: int | None = None
        self.tick = 0
        self.lost: set[int] = set()
        self.counters: list[dict[str, int]] = [
            {
                "energy_mj": 0,
                "violation_power_ns": 0,
                "violation_thermal_ns": 0,
                "ecc_uncorrected": 0,
                **d.get("counters", {}),
            }
            for d in self.devices
        ]
        self._applied: set[tuple[int, int | None]] = set()  # (event index, run) adds done
        self.initialised = 0
        self.shutdowns = 0
        self.calls: dict[str, int] = {}
        self.threads: set[str] = set()  # names of the threads that called in

    # ------------------------------------------------------------------ script

    def gpuopt_advance(self, run_seq: int | None, tick: int) -> None:
        self.run_seq, self.tick = run_seq, tick
        for pos, d in enumerate(self.devices):
            if run_seq is not None and pos not in self.lost:
                self.counters[pos]["energy_mj"] += int(d.get("energy_mj_per_tick", 0))
        for n, ev in enumerate(self.events):
            if not self._matches(ev):
                continue
            at = self._pos(ev.get("gpu", 0))
            if at is None:
                continue
            if ev.get("lost"):
                self.lost.add(at)
            if "add" in ev and (n, run_seq) not in self._applied:
                self._applied.add((n, run_seq))
                for key, value in ev["add"].items():
                    self.counters[at][key] = self.counters[at].get(key, 0) + int(value)

    def _matches(self, ev: dict[str, Any]) -> bool:
        runs = ev.get("runs")
        if runs == "idle":
            if self.run_seq is not None:
                return False
        elif runs == "all":
            if self.run_seq is None:
                return False
        elif runs is not None and self.run_seq not in runs:
            return False
        ticks = ev.get("ticks")
        if ticks:
            first, end = ticks[0], ticks[1] if len(ticks) > 1 else None
            if self.tick < (first or 0) or (end is not None and self.tick >= end):
                return False
        return True

    def _pos(self, gpu: int) -> int | None:
        for pos, d in enumerate(self.devices):
            if d.get("index", pos) == gpu:
                return pos
        return None

    def _value(self, pos: int, field: str) -> Any:
        d = self.devices[pos]
        value = d.get("idle", {}).get(field)
        if self.run_seq is not None and field in d.get("busy", {}):
            value = d["busy"][field]
        for ev in self.events:
            if (
                "set" in ev
                and field in ev["set"]
                and self._matches(ev)
                and self._pos(ev.get("gpu", 0)) == pos
            ):
                value = ev["set"][field]
        return value

    def _processes(self, pos: int) -> list[int]:
        pids = list(self.devices[pos].get("processes", []))
        for ev in self.events:
            if "processes" in ev and self._matches(ev) and self._pos(ev.get("gpu", 0)) == pos:
                pids = list(ev["processes"])
        return pids

    def _check(self, handle: int, key: str, fname: str, missing_code: int = NOT_SUPPORTED) -> None:
        self.calls[fname] = self.calls.get(fname, 0) + 1
        self.threads.add(threading.current_thread().name)
        if handle in self.lost:
            raise self.NVMLError(GPU_IS_LOST)
        if key in self.devices[handle].get("unsupported", ()):
            raise self.NVMLError(missing_code)

    def _field(self, handle: int, field: str, fname: str, key: str | None = None) -> Any:
        self._check(handle, key or field, fname)
        value = self._value(handle, field)
        if value is None:
            raise self.NVMLError(NOT_SUPPORTED)
        return value

    # ------------------------------------------------------------------ pynvml API

    def nvmlInit(self) -> None:
        self.threads.add(threading.current_thread().name)
        err = self.scenario.get("init_error")
        if err:
            raise self.NVMLError(int(err.get("code", 999)))
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(self.scenario.get("driver", "replay"))

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        pos = self._pos(index)
        if pos is None:
            raise self.NVMLError(2)
        return pos

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> Any:
        for pos, d in enumerate(self.devices):
            if d.get("uuid") == uuid:
                return pos
            if uuid in d.get("mig_uuids", ()):
                return ("mig", pos)
        raise self.NVMLError(6)  # not found

    def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, h: Any) -> int:
        if isinstance(h, tuple):
            return int(h[1])
        raise self.NVMLError(2)

    def nvmlDeviceGetIndex(self, h: int) -> int:
        return int(self.devices[h].get("index", h))

    def nvmlDeviceGetName(self, h: int) -> str:
        self._check(h, "name", "nvmlDeviceGetName")
        return str(self.devices[h].get("name", "replayed GPU"))

    def nvmlDeviceGetUUID(self, h: int) -> str:
        self._check(h, "uuid", "nvmlDeviceGetUUID")
        return str(self.devices[h].get("uuid", f"GPU-replay-{h}"))

    def nvmlDeviceGetMaxClockInfo(self, h: int, kind: int) -> float:
        key = "max_sm_clock_mhz" if kind == self.NVML_CLOCK_SM else "max_mem_clock_mhz"
        self._check(h, key, "nvmlDeviceGetMaxClockInfo")
        value = self.devices[h].get(key)
        if value is None:
            raise self.NVMLError(NOT_SUPPORTED)
        return float(value)

    def nvmlDeviceGetMigMode(self, h: int) -> list[int]:
        self._check(h, "mig", "nvmlDeviceGetMigMode")
        mig = self.devices[h].get("mig")
        if mig is None:
            raise self.NVMLError(NOT_SUPPORTED)
        return [int(bool(mig)), int(bool(mig))]

    def nvmlDeviceGetClockInfo(self, h: int, kind: int) -> float:
        field = "sm_clock_mhz" if kind == self.NVML_CLOCK_SM else "mem_clock_mhz"
        return float(self._field(h, field, "nvmlDeviceGetClockInfo"))

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        self._check(h, "clock_reasons_event", "nvmlDeviceGetCurrentClocksEventReasons",
                    FUNCTION_NOT_FOUND)  # fmt: skip
        return int(self._field(h, "clock_reasons", "nvmlDeviceGetCurrentClocksEventReasons"))

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: int) -> int:
        return int(self._field(h, "clock_reasons", "nvmlDeviceGetCurrentClocksThrottleReasons"))

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return int(float(self._field(h, "power_w", "nvmlDeviceGetPowerUsage")) * 1000)

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return int(float(self._field(h, "power_limit_w", "nvmlDeviceGetEnforcedPowerLimit")) * 1000)

    def nvmlDeviceGetTemperature(self, h: int, _sensor: int) -> int:
        return int(self._field(h, "temperature_c", "nvmlDeviceGetTemperature"))

    def nvmlDeviceGetUtilizationRates(self, h: int) -> _Struct:
        self._check(h, "utilization", "nvmlDeviceGetUtilizationRates")
        gpu = self._field(h, "util_gpu", "nvmlDeviceGetUtilizationRates")
        mem = self._value(h, "util_mem")
        return _Struct(gpu=int(gpu), memory=int(mem or 0))

    def nvmlDeviceGetMemoryInfo(self, h: int) -> _Struct:
        self._check(h, "mem_used_bytes", "nvmlDeviceGetMemoryInfo")
        total = int(self.devices[h].get("mem_total_bytes", 0))
        used = int(self._value(h, "mem_used_bytes") or 0)
        return _Struct(total=total, used=used, free=max(total - used, 0))

    def nvmlDeviceGetPcieThroughput(self, h: int, counter: int) -> int:
        field = "pcie_tx_kbps" if counter == self.NVML_PCIE_UTIL_TX_BYTES else "pcie_rx_kbps"
        return int(self._field(h, field, "nvmlDeviceGetPcieThroughput"))

    def nvmlDeviceGetPerformanceState(self, h: int) -> int:
        return int(self._field(h, "pstate", "nvmlDeviceGetPerformanceState"))

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        self._check(h, "energy", "nvmlDeviceGetTotalEnergyConsumption")
        return self.counters[h]["energy_mj"]

    def nvmlDeviceGetViolationStatus(self, h: int, policy: int) -> _Struct:
        thermal = policy == self.NVML_PERF_POLICY_THERMAL
        self._check(h, "violation_thermal" if thermal else "violation_power",
                    "nvmlDeviceGetViolationStatus")  # fmt: skip
        key = "violation_thermal_ns" if thermal else "violation_power_ns"
        return _Struct(referenceTime=0, violationTime=self.counters[h][key])

    def nvmlDeviceGetTotalEccErrors(self, h: int, _error_type: int, _counter_type: int) -> int:
        self._check(h, "ecc", "nvmlDeviceGetTotalEccErrors")
        return self.counters[h]["ecc_uncorrected"]

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[_Struct]:
        self._check(h, "processes", "nvmlDeviceGetComputeRunningProcesses")
        return [_Struct(pid=p, usedGpuMemory=None) for p in self._processes(h)]


class ReplayBackend(NvmlBackend):
    """The NVML backend reading a scenario instead of the driver. Labelled "replay"."""

    source = "replay"

    def __init__(self, scenario: str | Path | dict[str, Any]):
        self.scenario = load_scenario(scenario)
        self.replay_lib = ReplayLib(self.scenario)
        super().__init__(lib=self.replay_lib, use_env=False)

    @property
    def title(self) -> str:
        return str(self.scenario.get("title") or self.scenario.get("name") or "replay")
