"""Nsight Systems: the kernel and memory-copy summaries of `nsys stats`, and how to run it.

`nsys stats --format csv --report cuda_gpu_kern_sum --report cuda_gpu_mem_time_sum REPORT`
prints one CSV table per report (a header row, then one row per kernel or copy kind), maybe
with the tool's own "Processing ..." lines and blank lines between them. The kernel summary's
columns are Time (%), Total Time (ns), Instances, Avg/Med/Min/Max/StdDev (ns), Name; the
memory summary has Count and Operation instead of Instances and Name.
"""

from __future__ import annotations

import csv
import re
import shlex
import shutil
from collections.abc import Iterable, Sequence
from typing import Any

from measure.errors import BadInput

TOP = 10
KERNEL_REPORT = "cuda_gpu_kern_sum"
MEMORY_REPORT = "cuda_gpu_mem_time_sum"


class NsysError(BadInput, ValueError):
    """Text that is not an `nsys stats` CSV summary, in one line."""


def _number(text: str) -> float | None:
    t = text.strip().replace(",", "")
    try:
        return float(t)
    except ValueError:
        return None


def _tables(lines: Iterable[str]) -> list[list[list[str]]]:
    """The CSV tables in the text: runs of lines that start with a quoted header or row."""
    tables: list[list[list[str]]] = []
    block: list[str] = []
    for raw in [*lines, ""]:
        line = raw.rstrip("\r\n")
        if line.strip() and ("," in line) and not line.startswith(("Processing", "NOTICE", "**")):
            block.append(line)
            continue
        if block:
            tables.append(list(csv.reader(block)))
            block = []
    return tables


def _time_column(header: list[str], start: str) -> int | None:
    for i, h in enumerate(header):
        if h.strip().startswith(start):
            return i
    return None


def parse_stats(text: str | Iterable[str], top: int = TOP) -> dict[str, Any]:
    """The kernel and memory summaries of an `nsys stats --format csv` printout."""
    lines = text.splitlines() if isinstance(text, str) else text
    kernels: list[dict[str, Any]] = []
    copies: list[dict[str, Any]] = []
    for table in _tables(lines):
        header = [h.strip() for h in table[0]]
        total_col = _time_column(header, "Total Time")
        if total_col is None:
            continue
        scale = 1e-3 if "(ns)" in header[total_col] else 1.0  # to microseconds
        if "Name" in header and "Instances" in header:
            target, name_col, count_col = kernels, header.index("Name"), header.index("Instances")
        elif "Operation" in header and ({"Count", "Operations"} & set(header)):
            count = "Count" if "Count" in header else "Operations"  # older versions' word
            target, name_col, count_col = copies, header.index("Operation"), header.index(count)
        else:
            continue
        for row in table[1:]:
            if len(row) <= max(name_col, count_col, total_col):
                continue
            t = _number(row[total_col])
            n = _number(row[count_col])
            if t is None or n is None:
                continue
            target.append({"name": row[name_col].strip(), "calls": int(n), "self_us": t * scale})
    if not kernels and not copies:
        raise NsysError(
            "not an nsys stats CSV: no kernel summary (Name, Instances, Total Time) and no "
            "memory summary (Operation, Count, Total Time)"
        )
    total = sum(k["self_us"] for k in kernels)
    kernels.sort(key=lambda k: (-k["self_us"], k["name"]))
    for k in kernels:
        k["share"] = round(k["self_us"] / total, 4) if total else None
        k["self_us"] = round(k["self_us"], 3)
    for c in copies:
        c["self_us"] = round(c["self_us"], 3)
    return {
        "source": "nsys stats",
        "launches": sum(k["calls"] for k in kernels),
        "kernel_time_us": round(total, 3),
        "kernels": kernels[:top],
        "distinct_kernels": len(kernels),
        "memcpy_memset": sum(c["calls"] for c in copies),
        "copies": copies,
        "dominant": {k: kernels[0][k] for k in ("name", "share", "self_us", "calls")}
        if kernels
        else None,
    }


# ---------------------------------------------------------------------------- running


def tools() -> dict[str, str | None]:
    """Where nsys and ncu are on PATH (None when absent)."""
    return {"nsys": shutil.which("nsys"), "ncu": shutil.which("ncu")}


MISSING = (
    "neither Nsight Systems (nsys) nor Nsight Compute (ncu) is on PATH: install the CUDA "
    "toolkit's Nsight tools (or add them to PATH, often /usr/local/cuda/bin), or profile by "
    "hand and attach the result: `gpuopt evidence add SESSION --ncu-csv FILE` for "
    "`ncu --csv --page raw` output, `--file FILE` for an nsys report"
)


def profile_commands(command: str, out_base: str) -> list[str]:
    """The shell commands that profile `command` under nsys and print its summaries as CSV."""
    rep = shlex.quote(out_base)
    return [
        f"nsys profile --force-overwrite=true --trace=cuda,nvtx -o {rep} {command}",
        f"nsys stats --format csv --report {KERNEL_REPORT} --report {MEMORY_REPORT} "
        f"{shlex.quote(out_base + '.nsys-rep')}",
    ]


NCU_METRICS = (
    "gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,"
    "sm__throughput.avg.pct_of_peak_sustained_elapsed"
)


def kernel_base_name(name: str) -> str:
    """A kernel's function name as ncu's --kernel-name matches it by default (no return type,
    namespace, template arguments or parameters): "void at::native::f<4>(int)" gives "f"."""
    depth = 0
    cut = []
    for ch in name:  # drop everything inside <...> and (...)
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            cut.append(ch)
    words = "".join(cut).split()
    return (words[-1] if words else name).split("::")[-1]


def ncu_command(command: str, kernels: int = 5, names: Sequence[str] = ()) -> str:
    """`ncu --csv --page raw` with time and the throughput metrics: on the kernels `names`
    (the top kernels by time, from nsys) when given, else on the first launches."""
    pick = ""
    if names:
        bases = sorted({re.escape(kernel_base_name(n)) for n in names})
        pick = f"--kernel-name {shlex.quote('regex:^(' + '|'.join(bases) + ')$')} "
    return (
        f"ncu --csv --page raw --print-units base {pick}--launch-count {int(kernels)} "
        f"--metrics {NCU_METRICS} {command}"
    )
