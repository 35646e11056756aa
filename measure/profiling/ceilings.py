"""Peak figures of common data-center and workstation GPUs, each with its source.

Vendor figures: dense (sparsity speed-ups removed), at boost clock, in FLOP/s per dtype and
bytes/s of memory bandwidth. Real kernels reach less: the measured probe says how much less
on this machine, and a position against these is "of the vendor peak", never of the reachable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

T = 1e12


@dataclass(frozen=True)
class Part:
    name: str
    pattern: str  # matched (case-insensitive) against the device name torch reports
    bandwidth: float  # bytes/s
    flops: dict[str, float] = field(default_factory=dict)  # dtype -> FLOP/s (dense)
    source: str = ""

    def peak(self, dtype: str) -> float | None:
        return self.flops.get(dtype) or self.flops.get("float32")


_NV_DENSE = "sparsity figures halved to dense"
PARTS: tuple[Part, ...] = (
    Part(
        "H200 SXM",
        r"\bH200\b",
        4.8e12,
        {"float64": 67 * T, "float32": 67 * T, "tfloat32": 494.7 * T,
         "bfloat16": 989.4 * T, "float16": 989.4 * T, "float8": 1978.9 * T},
        f"NVIDIA H200 Tensor Core GPU datasheet, nvidia.com/en-us/data-center/h200 ({_NV_DENSE})",
    ),
    Part(
        "H100 PCIe",
        r"\bH100\b.*PCIe",
        2.0e12,
        {"float64": 51 * T, "float32": 51 * T, "tfloat32": 378 * T,
         "bfloat16": 756 * T, "float16": 756 * T, "float8": 1513 * T},
        f"NVIDIA H100 Tensor Core GPU datasheet, nvidia.com/en-us/data-center/h100 ({_NV_DENSE})",
    ),
    Part(
        "H100 SXM",
        r"\bH100\b",
        3.35e12,
        {"float64": 67 * T, "float32": 67 * T, "tfloat32": 494.7 * T,
         "bfloat16": 989.4 * T, "float16": 989.4 * T, "float8": 1978.9 * T},
        f"NVIDIA H100 Tensor Core GPU datasheet, nvidia.com/en-us/data-center/h100 ({_NV_DENSE})",
    ),
    Part(
        "A100 80GB PCIe",
        r"\bA100\b.*80GB.*PCIe|\bA100\b.*PCIe.*80GB",
        1.935e12,
        {"float64": 19.5 * T, "float32": 19.5 * T, "tfloat32": 156 * T,
         "bfloat16": 312 * T, "float16": 312 * T},
        f"NVIDIA A100 Tensor Core GPU datasheet, nvidia.com/en-us/data-center/a100 ({_NV_DENSE})",
    ),
    Part(
        "A100 40GB",
        r"\bA100\b.*40GB",
        1.555e12,
        {"float64": 19.5 * T, "float32": 19.5 * T, "tfloat32": 156 * T,
         "bfloat16": 312 * T, "float16": 312 * T},
        f"NVIDIA A100 Tensor Core GPU datasheet, nvidia.com/en-us/data-center/a100 ({_NV_DENSE})",
    ),
    Part(
        "A100 80GB SXM",
        r"\bA100\b",
        2.039e12,
        {"float64": 19.5 * T, "float32": 19.5 * T, "tfloat32": 156 * T,
         "bfloat16": 312 * T, "float16": 312 * T},
        f"NVIDIA A100 Tensor Core GPU datasheet, nvidia.com/en-us/data-center/a100 ({_NV_DENSE})",
    ),
    Part(
        "L40S",
        r"\bL40S\b",
        864e9,
        {"float32": 91.6 * T, "tfloat32": 183 * T, "bfloat16": 362.05 * T,
         "float16": 362.05 * T, "float8": 733 * T},
        f"NVIDIA L40S GPU datasheet, nvidia.com/en-us/data-center/l40s ({_NV_DENSE})",
    ),
    Part(
        "RTX 4090",
        r"RTX 4090",
        1008e9,
        {"float32": 82.6 * T, "tfloat32": 82.6 * T, "bfloat16": 165.2 * T, "float16": 165.2 * T},
        "NVIDIA Ada GPU architecture whitepaper, appendix A (GeForce RTX 4090; tensor FLOP/s "
        "with FP32 accumulate, dense)",
    ),
    Part(
        "MI300X",
        r"MI300X",
        5.3e12,
        {"float64": 163.4 * T, "float32": 163.4 * T, "tfloat32": 653.7 * T,
         "bfloat16": 1307.4 * T, "float16": 1307.4 * T, "float8": 2614.9 * T},
        "AMD Instinct MI300X accelerator data sheet, amd.com (matrix peak, dense)",
    ),
)  # fmt: skip


def part_for(device_name: str | None) -> Part | None:
    """The table's part for a device name ("NVIDIA H100 80GB HBM3"), or None."""
    if not device_name:
        return None
    for part in PARTS:
        if re.search(part.pattern, device_name, re.I):
            return part
    return None
