"""session.profile.summarize: the worker's figures placed against the ceilings, the measured
probe's and, for a GPU in the table, the vendor's (figures as a GPU worker would report)."""

from __future__ import annotations

import pytest

from session.profile.run import summarize
from session.profile.text import fact_lines, roofline_lines

GPU_DATA = {
    "device": "cuda:0", "device_name": "NVIDIA H200", "dtype": "bfloat16", "step_ms": 2.0,
    "launches": 4, "launch_source": "CUDA kernels", "profiled_steps": 3,
    "kernels": [{"name": "sm90_xmma_gemm_bf16", "calls": 1, "self_us": 1500.0, "share": 0.75}],
    "dominant": {"name": "sm90_xmma_gemm_bf16", "share": 0.75},
    "work": {"flops": 1.0e12, "bytes": 2.0e9},
    "probe": {"bandwidth_bytes_per_s": 4.0e12, "flops_per_s": 7.0e14, "launch_s": 4e-6,
              "how": "copy, matmul, launches"},
    "traceback": "kept out", "gpuopt_worker": "profile",
}  # fmt: skip


def test_gpu_profile_against_probe_and_vendor_peak():
    s = summarize(GPU_DATA, "baseline", "gemm")
    assert s["part"] == "H200 SXM" and "traceback" not in s
    pos = s["roofline"]
    assert pos["intensity"] == pytest.approx(500.0)
    assert pos["ridge"] == pytest.approx(7.0e14 / 4.0e12)
    assert pos["suggested"] == "compute-bound"
    assert pos["flops_fraction"] == pytest.approx(5.0e14 / 7.0e14)
    assert pos["vendor"]["flops_fraction"] == pytest.approx(5.0e14 / 989.4e12)
    text = "\n".join(fact_lines(s) + roofline_lines(s))
    assert "launches per step 4 (CUDA kernels)" in text
    assert "of the vendor peak (H200 SXM: NVIDIA H200" in text
    assert "a suggestion to confirm" in text


def test_launch_bound_when_the_launches_fill_the_step():
    data = {**GPU_DATA, "step_ms": 0.05, "launches": 20}
    pos = summarize(data, "baseline", "tiny")["roofline"]
    assert pos["suggested"] == "launch-bound"
    assert "20 launches x 4 µs each = 160% of the step's 0.05 ms" in pos["reasons"][0]


def test_cpu_profile_has_no_vendor_part():
    data = {**GPU_DATA, "device": "cpu", "device_name": None, "dtype": "float32"}
    s = summarize(data, "baseline", "cpu")
    assert s["part"] is None and s["roofline"]["vendor"] is None
    assert s["roofline"]["ceilings"]["source"].startswith("measured on this machine")
