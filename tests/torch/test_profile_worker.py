"""The worker's profile mode on CPU with real torch: operator tables, the dominant op, the
intermediate-tensor table with its byte counts, write/read pairs, FLOPs and bytes, and the
class the measured ceilings suggest. One worker process profiles every problem."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from profile_problems import write_all

from measure import harness
from session.profile.check import check_predictions, compare, estimate
from session.profile.run import summarize
from session.profile.text import fact_lines, shared_rows

pytest.importorskip("torch")

KIB256 = 256 * 256 * 4  # one 256x256 float32 tensor


# Every test here reads one module fixture that starts torch workers (25-35 s at load
# ~10, its cost lands on whichever test runs first): the whole module is slow.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = write_all(tmp_path_factory.mktemp("problems"))
    names = ["naive", "inplace", "compiled", "fused", "mm3", "matmul", "add"]
    jobs = [
        {"name": n, "mode": "profile", "kind": "kernelbench", "spec": f"{n}.py", "steps": 2,
         "trace": str(root / f"{n}.trace.json")}
        for n in names
    ]  # fmt: skip
    env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    ran = harness.run_jobs(jobs, root, python=sys.executable, env=env, timeout_s=120)
    out = {}
    for n, r in zip(names, ran, strict=True):
        assert r.ok, r.output_tail
        out[n] = summarize(r.data, "baseline", n)
    return out


def test_naive_softmax_tables(profiles):
    s = profiles["naive"]
    assert s["sequence"] == ["aten::max", "aten::sub", "aten::exp", "aten::sum", "aten::div"]
    assert s["launches"] == 5 and s["operator_count"] == 5
    # The dominant op is the table's first. Which pass it is, is not pinned: on a shared
    # 2-core CPU exp, max and div of 128x1024 each measured 30-320 µs from run to run.
    top = s["ops_by_name"][0]
    assert s["dominant"]["name"] == top["name"] and s["dominant"]["share"] == top["share"]
    assert top["name"] in s["sequence"] and 0 < top["share"] <= 1
    assert sum(r["share"] for r in s["ops_by_name"]) == pytest.approx(1.0, abs=1e-3)
    row = s["intermediates"][0]
    assert {"bytes", "shape", "dtype", "producer", "consumers", "alive_us"} <= set(row)
    # The 128x1024 float32 tensors: sub's result read by exp; exp's read by sum and div.
    full = 128 * 1024 * 4
    made = {r["producer"]: r for r in s["intermediates"] if r["bytes"] == full}
    assert made["aten::sub"]["consumers"] == ["aten::exp"]
    assert made["aten::sub"]["shape"] == [128, 1024] and made["aten::sub"]["dtype"] == "float32"
    assert made["aten::exp"]["consumers"] == ["aten::sum", "aten::div"]
    assert made["aten::div"]["kind"] == "output"
    assert s["largest_intermediate"]["bytes"] == full
    # Pairs: sub → exp is the full-size one; exp is read twice, so it is no pair.
    pairs = [(p["producer"], p["consumer"], p["bytes"]) for p in s["pairs"]]
    assert pairs[0] == ("aten::sub", "aten::exp", full)
    assert s["pairs"][0]["saved_bytes"] == 2 * full
    assert ("aten::max", "aten::sub", 512) in pairs and ("aten::sum", "aten::div", 512) in pairs
    assert not any(p[0] == "aten::exp" for p in pairs)
    # At the peak exp's result and the output are alive together.
    assert s["live_peak"]["bytes"] >= 2 * full
    assert Path(s["trace"]).is_file()


def test_matmul_then_three_elementwise_ops(profiles):
    s = profiles["mm3"]
    assert s["sequence"] == ["aten::matmul", "aten::mul", "aten::add", "aten::relu"]
    assert s["dominant"]["name"] == "aten::mm"  # 2·256³ FLOPs against 3·256² elementwise
    # its share is of measured time: most of it on a quiet machine, but a slow spell during
    # the elementwise ops moved it to 0.47 in CI at rest, so only its range is held here
    assert 0 < s["dominant"]["share"] <= 1
    inter = [r for r in s["intermediates"] if r["kind"] == "intermediate"]
    # The scalars 2.0 and 1.0 become 8-byte tensors on the way: real, but not the subject.
    assert sorted(r["bytes"] for r in inter if r["bytes"] > 8) == [KIB256] * 3
    inter = [r for r in inter if r["bytes"] > 8]
    assert all(r["shape"] == [256, 256] and r["dtype"] == "float32" for r in inter)
    pairs = [(p["producer"], p["consumer"], p["bytes"], p["saved_bytes"]) for p in s["pairs"]]
    assert sorted(pairs) == sorted(
        [
            ("aten::matmul", "aten::mul", KIB256, 2 * KIB256),
            ("aten::mul", "aten::add", KIB256, 2 * KIB256),
            ("aten::add", "aten::relu", KIB256, 2 * KIB256),
        ]
    )
    work = s["work"]
    assert work["flops_by_kind"]["matmul"] == 2 * 256**3
    assert work["flops_by_kind"]["elementwise"] == 3 * 256 * 256
    # mm reads two and writes one; each elementwise op reads one and writes one.
    assert work["bytes"] == 9 * KIB256
    # Each boundary is seen once: listed, but none is "most frequent".
    assert {"from": "aten::matmul", "to": "aten::mul", "count": 1, "bytes": KIB256} in s[
        "boundaries"
    ]
    assert s["most_frequent_boundary"] is None
    assert "most frequent operator boundary: none" in "\n".join(fact_lines(s))


def test_an_intermediate_read_by_several_ops_is_listed_with_what_a_fusion_saves(profiles):
    s = profiles["naive"]
    full = 128 * 1024 * 4
    [exp] = [r for r in s["shared_intermediates"] if r["producer"] == "aten::exp"]
    assert exp["consumers"] == ["aten::sum", "aten::div"] and exp["bytes"] == full
    assert exp["saved_bytes"] == 3 * full  # its write, and the read of each reader
    assert ("aten::exp", "aten::sum, aten::div", "512 KiB", "1.5 MiB") in shared_rows(s)
    facts = "\n".join(fact_lines(s))
    assert "read by several ops (no write/read pair)" in facts


def test_fused_variant_moves_op_count_and_bytes(profiles):
    base, fused = profiles["naive"], profiles["fused"]
    mv = compare(base, fused)
    assert mv.before["operator_count"] == 5 and mv.after["operator_count"] == 1
    assert mv.moved["operator_count"] == -1 and mv.moved["bytes"] == -1
    assert mv.moved["intermediate_bytes"] == -1
    assert mv.after["bytes"] == 2 * 128 * 1024 * 4  # read the input, write the output
    fused["workload"] = "softmax"
    checks = check_predictions(
        "operators 5→1; no 512 KiB intermediate; fewer bytes moved", mv, fused
    )
    assert [c.held for c in checks] == [True, True, True], [c.line() for c in checks]
    wrong = check_predictions("launches 5→3, more bytes", mv, fused)
    assert [c.held for c in wrong] == [False, False]


def test_classes_by_the_measured_ceilings(profiles):
    mm = profiles["matmul"]["roofline"]
    add = profiles["add"]["roofline"]
    assert mm["suggested"] == "compute-bound", mm["reasons"]
    assert add["suggested"] == "memory-bound", add["reasons"]
    # Far from the ridge point on either side: not a borderline call.
    assert mm["intensity"] > 2 * mm["ridge"] and add["intensity"] < mm["ridge"] / 2
    assert "ridge point" in " ".join(mm["reasons"]) and mm["ceilings"]["source"].startswith(
        "measured"
    )
    assert add["bandwidth_fraction"] > 0 and add["achieved_bandwidth"] > 0


def test_estimates_for_a_hypothesis(profiles):
    s = profiles["naive"]
    share = next(r["share"] for r in s["ops_by_name"] if r["name"] == "aten::exp")
    e = estimate("exp is the slow pass; fuse sub and exp to drop the intermediate", s)
    assert "aten::exp" in e.names and "aten::sub" in e.names
    assert e.share is not None and e.amdahl == pytest.approx(1 / (1 - e.share))
    assert e.share >= share
    assert e.fusion_saved_bytes == 2 * 128 * 1024 * 4 + 1024  # sub→exp, and max→sub


def test_compile_counts_graph_breaks_and_the_ops_that_really_ran(profiles):
    dyn = profiles["compiled"]["dynamo"]
    assert dyn["graph_breaks"] >= 1 and dyn["unique_graphs"] >= 2
    assert "print" in " ".join(dyn["break_reasons"])
    # A fused graph does not prove one kernel: the profile counts what ran (sin, cos).
    assert profiles["compiled"]["launches"] >= 2
    # The counters are per process: a later workload in the same batch reports none.
    assert "dynamo" not in profiles["fused"]


def test_in_place_writes_and_views(profiles):
    s = profiles["inplace"]
    assert s["sequence"] == ["aten::matmul", "aten::mul", "aten::relu_", "aten::sum"]
    mul = next(r for r in s["intermediates"] if r["producer"] == "aten::mul")
    # relu_ writes it again and sum reads it through a view (the view is no reader).
    assert mul["rewritten"] and mul["consumers"] == ["aten::relu_", "aten::sum"]
    assert [(p["producer"], p["consumer"]) for p in s["pairs"]] == [("aten::matmul", "aten::mul")]
