# ruff: noqa: E501
"""Check NVML on a GPU machine: read every field on every GPU, time every call, list what
is unsupported, and write a replay fixture of what was seen.

    python -m tests.gpu.check_nvml --out DIR [--repeat 20] [--busy-seconds 5]

Writes DIR/check_nvml.json (the report) and DIR/replay_<gpu name>.json (a scenario that
`gpuopt telemetry --replay FILE` and the tests can play). With --busy-seconds, it also
loads GPU 0 with torch matrix products (when torch with CUDA is importable) to record
the "busy" values and a monitored run's trust verdict. Exit 0: done; 3: no GPU here.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def timed(fn: Any, *args: Any, repeat: int) -> dict[str, Any]:
    """Call repeat times; the value of the last call, or the NVML error."""
    import pynvml

    times: list[float] = []
    value: Any = None
    error = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            value = fn(*args)
        except pynvml.NVMLError as exc:
            times.append(time.perf_counter() - t0)
            error = f"{type(exc).__name__}: {exc}"
            break
        times.append(time.perf_counter() - t0)
    return {
        "value": value,
        "error": error,
        "unsupported": error is not None
        and ("NotSupported" in error or "FunctionNotFound" in error),
        "median_us": round(statistics.median(times) * 1e6, 1),
        "max_us": round(max(times) * 1e6, 1),
        "calls": len(times),
    }


def calls_for(h: Any) -> dict[str, tuple[str, Any, tuple[Any, ...]]]:
    """field or counter name -> (NVML function name, function, extra args)."""
    import pynvml as n

    return {
        "name": ("nvmlDeviceGetName", n.nvmlDeviceGetName, ()),
        "uuid": ("nvmlDeviceGetUUID", n.nvmlDeviceGetUUID, ()),
        "max_sm_clock_mhz": ("nvmlDeviceGetMaxClockInfo", n.nvmlDeviceGetMaxClockInfo, (n.NVML_CLOCK_SM,)),
        "max_mem_clock_mhz": ("nvmlDeviceGetMaxClockInfo", n.nvmlDeviceGetMaxClockInfo, (n.NVML_CLOCK_MEM,)),
        "mig": ("nvmlDeviceGetMigMode", n.nvmlDeviceGetMigMode, ()),
        "sm_clock_mhz": ("nvmlDeviceGetClockInfo", n.nvmlDeviceGetClockInfo, (n.NVML_CLOCK_SM,)),
        "mem_clock_mhz": ("nvmlDeviceGetClockInfo", n.nvmlDeviceGetClockInfo, (n.NVML_CLOCK_MEM,)),
        "clock_reasons_event": ("nvmlDeviceGetCurrentClocksEventReasons", n.nvmlDeviceGetCurrentClocksEventReasons, ()),
        "clock_reasons": ("nvmlDeviceGetCurrentClocksThrottleReasons", n.nvmlDeviceGetCurrentClocksThrottleReasons, ()),
        "power_w": ("nvmlDeviceGetPowerUsage", n.nvmlDeviceGetPowerUsage, ()),
        "power_limit_w": ("nvmlDeviceGetEnforcedPowerLimit", n.nvmlDeviceGetEnforcedPowerLimit, ()),
        "temperature_c": ("nvmlDeviceGetTemperature", n.nvmlDeviceGetTemperature, (n.NVML_TEMPERATURE_GPU,)),
        "utilization": ("nvmlDeviceGetUtilizationRates", n.nvmlDeviceGetUtilizationRates, ()),
        "mem_used_bytes": ("nvmlDeviceGetMemoryInfo", n.nvmlDeviceGetMemoryInfo, ()),
        "pcie_tx_kbps": ("nvmlDeviceGetPcieThroughput", n.nvmlDeviceGetPcieThroughput, (n.NVML_PCIE_UTIL_TX_BYTES,)),
        "pcie_rx_kbps": ("nvmlDeviceGetPcieThroughput", n.nvmlDeviceGetPcieThroughput, (n.NVML_PCIE_UTIL_RX_BYTES,)),
        "pstate": ("nvmlDeviceGetPerformanceState", n.nvmlDeviceGetPerformanceState, ()),
        "energy": ("nvmlDeviceGetTotalEnergyConsumption", n.nvmlDeviceGetTotalEnergyConsumption, ()),
        "violation_power": ("nvmlDeviceGetViolationStatus", n.nvmlDeviceGetViolationStatus, (n.NVML_PERF_POLICY_POWER,)),
        "violation_thermal": ("nvmlDeviceGetViolationStatus", n.nvmlDeviceGetViolationStatus, (n.NVML_PERF_POLICY_THERMAL,)),
        "ecc": ("nvmlDeviceGetTotalEccErrors", n.nvmlDeviceGetTotalEccErrors, (n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, n.NVML_VOLATILE_ECC)),
        "processes": ("nvmlDeviceGetComputeRunningProcesses", n.nvmlDeviceGetComputeRunningProcesses, ()),
    }  # fmt: skip


def plain(key: str, value: Any) -> Any:
    """An NVML answer in the units of the telemetry columns / the replay format."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode()
    if key in ("power_w", "power_limit_w"):
        return value / 1000.0
    if key == "utilization":
        return {"util_gpu": value.gpu, "util_mem": value.memory}
    if key == "mem_used_bytes":
        return {"mem_used_bytes": value.used, "mem_total_bytes": value.total}
    if key.startswith("violation_"):
        return int(value.violationTime)
    if key == "mig":
        return bool(value[0])
    if key == "processes":
        return [int(p.pid) for p in value]
    return value


def read_device(h: Any, repeat: int) -> dict[str, Any]:
    out = {}
    for key, (fname, fn, args) in calls_for(h).items():
        r = timed(fn, h, *args, repeat=1 if key == "processes" else repeat)
        r["function"] = fname
        r["value"] = plain(key, r["value"]) if r["error"] is None else None
        out[key] = r
    return out


def sample_values(reads: dict[str, Any]) -> dict[str, Any]:
    v: dict[str, Any] = {}
    for key in ("sm_clock_mhz", "mem_clock_mhz", "power_w", "power_limit_w", "temperature_c",
                "pcie_tx_kbps", "pcie_rx_kbps", "pstate"):  # fmt: skip
        if reads[key]["value"] is not None:
            v[key] = reads[key]["value"]
    reasons = reads["clock_reasons_event"]["value"]
    if reasons is None:
        reasons = reads["clock_reasons"]["value"]
    if reasons is not None:
        v["clock_reasons"] = int(reasons)
    if reads["utilization"]["value"]:
        v.update(reads["utilization"]["value"])
    if reads["mem_used_bytes"]["value"]:
        v["mem_used_bytes"] = reads["mem_used_bytes"]["value"]["mem_used_bytes"]
    return v


def busy_load(seconds: float) -> subprocess.Popen[bytes] | None:
    code = (
        "import torch, time\n"
        "assert torch.cuda.is_available()\n"
        "a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)\n"
        f"end = time.time() + {seconds}\n"
        "while time.time() < end:\n"
        "    for _ in range(20): a @ a\n"
        "    torch.cuda.synchronize()\n"
    )
    try:
        return subprocess.Popen([sys.executable, "-c", code])
    except OSError:
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description="Read, time and record every NVML field.")
    ap.add_argument("--out", required=True, type=Path, help="folder for the report and fixture")
    ap.add_argument("--repeat", type=int, default=20, help="calls per field for the timings")
    ap.add_argument("--busy-seconds", type=float, default=0.0,
                    help="load GPU 0 with torch this long to record busy values and a run")  # fmt: skip
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    try:
        import pynvml
    except ImportError as exc:
        print(f"NO GPU CHECK: nvidia-ml-py is not installed ({exc})")
        return 3
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        print(f"NO GPU: NVML cannot start here: {exc}")
        (args.out / "check_nvml.json").write_text(json.dumps({"gpu": False, "nvml": str(exc)}))
        return 3
    try:
        count = pynvml.nvmlDeviceGetCount()
        driver = pynvml.nvmlSystemGetDriverVersion()
        if count == 0:
            print("NO GPU: NVML started but lists 0 devices")
            return 3
        print(f"NVML up: driver {plain('', driver)}, {count} GPU(s)")
        report: dict[str, Any] = {"gpu": True, "driver": plain("", driver), "devices": []}
        devices = []
        for i in range(count):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            reads = read_device(h, args.repeat)
            unsupported = sorted(k for k, r in reads.items() if r["unsupported"])
            failing = {
                k: r["error"] for k, r in reads.items() if r["error"] and not r["unsupported"]
            }
            name = reads["name"]["value"] or f"GPU {i}"
            print(f"\nGPU {i}: {name}  {reads['uuid']['value']}")
            print(f"  {'field':22} {'NVML call':44} {'median µs':>10} {'max µs':>9}  value")
            for key, r in reads.items():
                shown = r["error"] if r["error"] else json.dumps(r["value"], default=str)[:60]
                print(
                    f"  {key:22} {r['function']:44} {r['median_us']:>10} {r['max_us']:>9}  {shown}"
                )
            print(f"  unsupported: {', '.join(unsupported) or 'none'}")
            if failing:
                print(f"  failing (not 'unsupported'): {failing}")
            mem = reads["mem_used_bytes"]["value"] or {}
            idle = sample_values(reads)
            device = {
                "index": i,
                "uuid": reads["uuid"]["value"] or "",
                "name": f"{name} (recorded)",
                "max_sm_clock_mhz": reads["max_sm_clock_mhz"]["value"],
                "max_mem_clock_mhz": reads["max_mem_clock_mhz"]["value"],
                "mem_total_bytes": mem.get("mem_total_bytes"),
                "mig": reads["mig"]["value"],
                "idle": idle,
                "busy": {},
                "unsupported": unsupported,
                "counters": {
                    "energy_mj": reads["energy"]["value"] or 0,
                    "violation_power_ns": reads["violation_power"]["value"] or 0,
                    "violation_thermal_ns": reads["violation_thermal"]["value"] or 0,
                    "ecc_uncorrected": reads["ecc"]["value"] or 0,
                },
                "energy_mj_per_tick": 0,
            }
            devices.append((h, device))
            report["devices"].append(
                {"index": i, "name": name, "unsupported": unsupported, "failing": failing,
                 "calls": {k: {x: r[x] for x in ("function", "median_us", "max_us", "error")}
                           for k, r in reads.items()}}
            )  # fmt: skip
        if args.busy_seconds > 0:
            report["run"] = busy_run(devices, args, report)
        fixture = {
            "name": "recorded",
            "title": f"Recorded on {devices[0][1]['name']}",
            "description": "Written by tests/gpu/check_nvml.py from a real GPU.",
            "expect": [report.get("run", {}).get("trust", "clean")],
            "devices": [d for _, d in devices],
            "events": [],
        }
        slug = re.sub(r"[^A-Za-z0-9]+", "_", devices[0][1]["name"]).strip("_").lower()
        path = args.out / f"replay_{slug}.json"
        path.write_text(json.dumps(fixture, indent=2, default=str) + "\n")
        (args.out / "check_nvml.json").write_text(json.dumps(report, indent=2, default=str))
        print(f"\nwrote {path} and {args.out / 'check_nvml.json'}")
    finally:
        pynvml.nvmlShutdown()
    return 0


def busy_run(
    devices: list[tuple[Any, dict[str, Any]]], args: Any, report: dict[str, Any]
) -> dict[str, Any]:
    """Load GPU 0, watch it with the real monitor as one run, record busy values."""
    from measure.telemetry import make_monitor

    rows: list[tuple[Any, ...]] = []
    monitor = make_monitor(rows.extend, "check")
    print(f"\nmonitor: {monitor.status}; loading GPU 0 for {args.busy_seconds:.0f} s")
    load = busy_load(args.busy_seconds)
    if load is None:
        monitor.close()
        return {"error": "could not start the torch load"}
    t0 = time.thread_time()
    monitor.run_started("busy", load.pid)
    time.sleep(args.busy_seconds / 2)
    h, device = devices[0]
    device["busy"] = sample_values(read_device(h, 1))
    load.wait()
    obs = monitor.run_finished("busy")
    cpu = monitor.sampler.cpu_s
    monitor.close()
    run_samples = [r for r in rows if r[1] == "busy"]
    print(f"  run: {len(run_samples)} samples; trust {obs.trust}; reasons {obs.reasons}")
    print(f"  deltas: {json.dumps(obs.deltas.get('gpus', {}), default=str)}")
    print(
        f"  sampler CPU {cpu:.3f} s over the whole check (thread time {time.thread_time() - t0:.3f} s)"
    )
    if load.returncode:
        print(f"  (the torch load exited {load.returncode}: torch with CUDA may be missing)")
    return {"trust": obs.trust, "reasons": obs.reasons, "deltas": obs.deltas,
            "samples": len(run_samples), "load_exit": load.returncode}  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
