"""measure.profiling: the nsys stats importer (a sample written from the documented CSV
layout), the GPU ceiling table, and the roofline arithmetic and class rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from measure.profiling import ceilings, nsys, roofline

DATA = Path(__file__).resolve().parents[1] / "session" / "data"


def test_nsys_stats_kernel_and_memory_summaries():
    s = nsys.parse_stats((DATA / "profile_nsys_stats.csv").read_text())
    assert s["launches"] == 70 and s["distinct_kernels"] == 3
    top = s["kernels"][0]
    assert top["name"] == "ampere_sgemm_128x64_tn" and top["calls"] == 10
    assert top["self_us"] == pytest.approx(1204.48)  # nanoseconds with separators → µs
    assert top["share"] == pytest.approx(1204.48 / (1204.48 + 481.792 + 240.896), abs=1e-4)
    assert s["dominant"]["name"] == top["name"]
    assert s["memcpy_memset"] == 6
    assert [c["name"] for c in s["copies"]] == ["[CUDA memcpy Host-to-Device]", "[CUDA memset]"]


def test_nsys_refuses_other_text():
    with pytest.raises(nsys.NsysError, match="not an nsys stats CSV"):
        nsys.parse_stats('"a","b"\n"1","2"\n')


def test_nsys_commands_and_the_missing_tools_text():
    cmds = nsys.profile_commands("python bench.py", "out dir/rep")
    assert cmds[0].startswith("nsys profile") and cmds[0].endswith("python bench.py")
    assert "'out dir/rep.nsys-rep'" in cmds[1] and "cuda_gpu_kern_sum" in cmds[1]
    assert "--page raw" in nsys.ncu_command("x") and "dram__throughput" in nsys.ncu_command("x")
    assert "gpuopt evidence add" in nsys.MISSING


@pytest.mark.parametrize(
    ("device", "part"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("AMD Instinct MI300X", "MI300X"),
    ],
)
def test_ceiling_table_matches_device_names(device, part):
    found = ceilings.part_for(device)
    assert found is not None and found.name == part
    assert found.source and found.bandwidth > 1e11 and found.peak("bfloat16")


def test_unknown_device_has_no_part():
    assert ceilings.part_for("cpu") is None and ceilings.part_for(None) is None


def test_roofline_classes():
    ceil = roofline.Ceilings(bandwidth=1e10, flops=1e11, launch_s=5e-6, source="probe")
    mem = roofline.position(step_s=1e-3, flops=1e6, nbytes=1e7, launches=1, ceilings=ceil)
    assert mem.suggested == roofline.MEMORY and mem.ridge == pytest.approx(10)
    assert mem.bandwidth_fraction == pytest.approx(1.0) and not mem.borderline
    comp = roofline.position(step_s=1e-2, flops=1e9, nbytes=1e6, launches=1, ceilings=ceil)
    assert comp.suggested == roofline.COMPUTE
    # 100 launches of 5 µs in a 0.6 ms step: the launches are most of it.
    launch = roofline.position(step_s=6e-4, flops=1e3, nbytes=1e3, launches=100, ceilings=ceil)
    assert launch.suggested == roofline.LAUNCH and "100 launches" in launch.reasons[0]
    near = roofline.position(step_s=1e-3, flops=1.5e7, nbytes=1e6, launches=1, ceilings=ceil)
    assert near.borderline
    none = roofline.position(step_s=1e-3, flops=1.0, nbytes=1.0, launches=1, ceilings=None)
    assert none.suggested is None


def test_vendor_fractions_beside_the_measured_ones():
    part = ceilings.part_for("NVIDIA H200")
    table = roofline.vendor(part, "bfloat16")
    probe = roofline.Ceilings(bandwidth=4e12, flops=7e14, launch_s=4e-6, source="probe")
    pos = roofline.position(step_s=1e-3, flops=1e9, nbytes=4e9, launches=3, ceilings=probe,
                            table=table)  # fmt: skip
    assert pos.vendor is not None
    assert pos.vendor["bandwidth_fraction"] == pytest.approx(4e12 / 4.8e12)
    assert pos.bandwidth_fraction == pytest.approx(1.0)


def test_amdahl_ceiling():
    assert roofline.amdahl_ceiling(0.5) == pytest.approx(2.0)
    assert roofline.amdahl_ceiling(0.0) == pytest.approx(1.0)
    assert roofline.amdahl_ceiling(1.0) == float("inf")


def test_ncu_targets_the_top_kernels_by_their_function_names():
    long = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::exp_kernel_cuda"
        "(at::TensorIteratorBase&)::{lambda()#1}, at::detail::Array<char*, 2> >"
        "(int, at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#1})"
    )
    assert nsys.kernel_base_name(long) == "vectorized_elementwise_kernel"
    assert nsys.kernel_base_name("ampere_sgemm_128x64_tn") == "ampere_sgemm_128x64_tn"
    cmd = nsys.ncu_command("python b.py", names=["ampere_sgemm_128x64_tn", long])
    assert "--kernel-name 'regex:^(ampere_sgemm_128x64_tn|vectorized_elementwise_kernel)$'" in cmd
