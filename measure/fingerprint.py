"""The environment fingerprint of a baseline: the machine and software that shape timings.

Only static facts (GPU model, driver, maximum clocks, versions, CPU) go in, never live
state such as current clocks or temperatures, so the same machine gives the same
fingerprint. Of the environment, only an allowlist of variables known to change
performance is kept; nothing else (no tokens, no paths, no secrets) is ever read out.

Returns a plain dict with the fields of `session.models.EnvironmentFingerprint` (this
package does not import `session`).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from contextlib import redirect_stdout
from io import StringIO
from typing import Any

# Variables that change how fast the same code runs. Nothing else is stored.
ALLOWED_VARIABLES: tuple[str, ...] = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUDA_CACHE_DISABLE",
    "CUDA_FORCE_PTX_JIT",
    "NVIDIA_TF32_OVERRIDE",
    "NVIDIA_VISIBLE_DEVICES",
    "CUBLAS_WORKSPACE_CONFIG",
    "CUBLASLT_WORKSPACE_SIZE",
    "CUDNN_LOGINFO_DBG",
    "TORCH_CUDNN_V8_API_ENABLED",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "TORCH_USE_CUDA_DSA",
    "TORCH_SHOW_CPP_STACKTRACES",
    "TORCHINDUCTOR_MAX_AUTOTUNE",
    "TORCHINDUCTOR_FREEZING",
    "TORCH_COMPILE_DISABLE",
    "TORCHDYNAMO_DISABLE",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
    "OMP_NUM_THREADS",
    "OMP_PROC_BIND",
    "OMP_PLACES",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "KMP_AFFINITY",
    "NCCL_P2P_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
)


def allowed_variables(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    return {k: env[k] for k in ALLOWED_VARIABLES if k in env}


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def gpu_info() -> tuple[list[dict[str, Any]], str, str | None]:
    """(GPUs, note on why there are none, CUDA version the driver supports) through NVML."""
    try:
        import pynvml  # lazy: loads the NVML library, only when a fingerprint is taken
    except Exception as exc:
        return [], f"NVML unavailable: {_one_line(exc)}", None
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return [], f"NVML unavailable: {_one_line(exc)}", None
    try:
        gpus: list[dict[str, Any]] = []
        driver = _call(pynvml.nvmlSystemGetDriverVersion) or ""
        cuda = _call(pynvml.nvmlSystemGetCudaDriverVersion_v2) or _call(
            pynvml.nvmlSystemGetCudaDriverVersion
        )
        cuda_text = f"{cuda // 1000}.{(cuda % 1000) // 10}" if isinstance(cuda, int) else None
        count = _call(pynvml.nvmlDeviceGetCount) or 0
        sm, memclk = pynvml.NVML_CLOCK_SM, pynvml.NVML_CLOCK_MEM
        for i in range(count):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            mig = _call(pynvml.nvmlDeviceGetMigMode, h)
            mem = _call(pynvml.nvmlDeviceGetMemoryInfo, h)
            persistence = _call(pynvml.nvmlDeviceGetPersistenceMode, h)
            gpus.append(
                {
                    "index": i,
                    "name": _text(_call(pynvml.nvmlDeviceGetName, h)),
                    "uuid": _text(_call(pynvml.nvmlDeviceGetUUID, h)),
                    "driver": _text(driver),
                    "max_sm_clock_mhz": _call(pynvml.nvmlDeviceGetMaxClockInfo, h, sm),
                    "max_mem_clock_mhz": _call(pynvml.nvmlDeviceGetMaxClockInfo, h, memclk),
                    "persistence_mode": None if persistence is None else bool(persistence),
                    "mig_mode": None if mig is None else bool(mig[0]),
                    "memory_total_bytes": getattr(mem, "total", None),
                }
            )  # fmt: skip
        note = "" if gpus else "NVML found no GPU"
        return gpus, note, cuda_text
    except Exception as exc:
        return [], f"NVML error: {_one_line(exc)}", None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def _call(fn: Any, *args: Any) -> Any:
    """A value NVML does not support is None; only that field is lost."""
    try:
        return fn(*args)
    except Exception:
        return None


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


_TORCH_PROBE = r"""
import ast, importlib.metadata as md, importlib.util as u, json, os, platform
out = {"torch": None, "torch_cuda": None, "python": platform.python_version()}
try:
    out["torch"] = md.version("torch")
    spec = u.find_spec("torch")
    loc = list(spec.submodule_search_locations or []) if spec else []
    for d in loc:
        p = os.path.join(d, "version.py")
        if os.path.exists(p):
            for node in ast.parse(open(p, encoding="utf-8").read()).body:
                if isinstance(node, ast.Assign) and any(
                    getattr(t, "id", "") == "cuda" for t in node.targets
                ):
                    v = node.value
                    out["torch_cuda"] = v.value if isinstance(v, ast.Constant) else None
            break
except Exception:
    pass
print(json.dumps(out))
"""


def torch_versions(python: str | None = None) -> dict[str, str | None]:
    """torch's version and its CUDA build, read from its metadata without importing it.

    With `python` (the contract's interpreter), the same few lines run there: a fraction
    of a second, where importing torch would take several.
    """
    if python and os.path.realpath(shutil.which(python) or python) != os.path.realpath(
        sys.executable
    ):
        try:
            proc = subprocess.run(
                [python, "-c", _TORCH_PROBE], capture_output=True, text=True, timeout=30
            )
            data = json.loads(proc.stdout.strip().splitlines()[-1])
            return {k: data.get(k) for k in ("torch", "torch_cuda", "python")}
        except Exception:
            return {"torch": None, "torch_cuda": None, "python": None}
    scope: dict[str, Any] = {}
    try:
        buf = StringIO()
        with redirect_stdout(buf):
            exec(compile(_TORCH_PROBE, "<torch-probe>", "exec"), scope)
        data = json.loads(buf.getvalue().strip())
        return {k: data.get(k) for k in ("torch", "torch_cuda", "python")}
    except Exception:
        return {"torch": None, "torch_cuda": None, "python": None}


def nvcc_version() -> str | None:
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return None
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=20).stdout
    except Exception:
        return None
    m = re.search(r"release ([0-9.]+), V([0-9.]+)", out)
    if m:
        return m.group(2)
    lines = out.strip().splitlines()
    return lines[-1] if lines else None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def os_name() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return f"{platform.system()} {platform.release()}".strip()


def collect(python: str | None = None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The fingerprint of this machine, as a dict of EnvironmentFingerprint's fields."""
    gpus, note, cuda = gpu_info()
    versions = torch_versions(python)
    return {
        "gpus": gpus,
        "gpu_note": note,
        "cuda_runtime": cuda,
        "nvcc": nvcc_version(),
        "torch": versions["torch"],
        "torch_cuda": versions["torch_cuda"],
        "python": versions["python"] or platform.python_version(),
        "os": os_name(),
        "kernel": platform.release(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count() or 0,
        "hostname": socket.gethostname(),
        "variables": allowed_variables(environ),
    }
