"""Error statistics (in-process, real torch) and the pure rules built on them."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from measure import numerics
from session import models as m


@pytest.fixture(scope="module")
def worker():
    from measure.torch_worker import audit, base, compare, workload

    return SimpleNamespace(**{**vars(base), **vars(workload), **vars(audit), **vars(compare)})


def one(worker, ref, new, exact=False):
    return worker.compare_one("out", [ref], [new], [0], exact)


def test_tolerance_tables_agree(worker) -> None:
    assert worker._TOLERANCES == numerics.TOLERANCES
    assert numerics.default_tolerance("torch.float32") == (1.3e-6, 1e-5)
    assert numerics.default_tolerance("int64") == (0.0, 0.0)
    # The worker's table is torch.testing.assert_close's own defaults.
    for name in ("float16", "bfloat16", "float32", "float64"):
        dtype = getattr(torch, name)
        a = torch.ones(1, dtype=dtype)
        rtol, atol = numerics.TOLERANCES[name]
        torch.testing.assert_close(a + (atol + rtol) * 0.9, a)
        with pytest.raises(AssertionError):
            torch.testing.assert_close(a + (atol + rtol) * 1.5, a)


def test_ulps_count_representable_values(worker) -> None:
    x = torch.tensor([1.0, -2.0, 0.0, 1e-30], dtype=torch.float32)
    y = torch.nextafter(x, torch.full_like(x, math.inf))
    z = torch.nextafter(y, torch.full_like(x, math.inf))
    s = one(worker, x, z)
    assert s["ulp_max"] == 2.0 and s["ulp_p50"] == 2.0
    # across zero: -tiny to +tiny is two steps (the two zeros are one value)
    t = torch.tensor([-1e-45], dtype=torch.float32)
    assert float(worker._ulps(t, -t, torch.float32).max()) == 2.0
    # ...but ULPs and relative error are reported over |ref| > atol only: near zero they
    # explode without meaning anything, and such differences are counted apart
    near = one(worker, t, -t)
    assert near["ulp_max"] is None and near["max_rel"] is None
    assert near["near_zero_diffs"] == 1 and near["passed"]
    d = torch.tensor([-1.0, 1.0], dtype=torch.float64)
    assert one(worker, d, d)["ulp_max"] == 0.0
    assert one(worker, d, -d)["ulp_max"] > 9e18  # opposite signs, no int64 overflow
    h = torch.tensor([1.0], dtype=torch.bfloat16)
    assert one(worker, h, torch.nextafter(h, torch.full_like(h, 2.0)))["ulp_max"] == 1.0


def test_nan_inf_and_signed_zero_statistics(worker) -> None:
    ref = torch.tensor([1.0, math.nan, math.inf, 0.0, 2.0])
    new = torch.tensor([1.0, math.nan, -math.inf, -0.0, math.nan])
    s = one(worker, ref, new)
    assert (s["nan_ref"], s["nan_new"], s["inf_ref"], s["inf_new"]) == (1, 2, 1, 1)
    assert not s["nonfinite_positions_match"]
    assert s["signed_zero_diffs"] == 1
    assert s["mismatches"] == 2  # -inf vs inf, NaN vs 2.0; matching NaNs and ±0 pass
    assert s["worst_index"] == [2]  # the first non-finite disagreement
    assert not s["passed"] and not s["bit_identical"]
    cls, why = numerics.suggest_class([s])
    assert cls == "C4" and "NaN/Inf" in why
    # exact: the sign of zero counts
    z = one(worker, torch.tensor([0.0]), torch.tensor([-0.0]), exact=True)
    assert z["mismatches"] == 1 and not z["passed"] and z["atol"] == 0.0


def test_tolerance_boundary_and_worst_index(worker) -> None:
    ref = torch.zeros(2, 3, dtype=torch.float32) + 1
    new = ref.clone()
    new[0, 1] += 5e-6  # within atol + rtol
    new[1, 2] += 1e-4  # outside
    s = one(worker, ref, new)
    assert s["mismatches"] == 1 and s["mismatch_share"] == pytest.approx(1 / 6)
    assert s["worst_index"] == [1, 2]
    assert s["max_abs"] == pytest.approx(1e-4, rel=1e-2)
    assert s["max_rel"] == pytest.approx(1e-4, rel=1e-2)
    assert s["mean_abs"] == pytest.approx((1e-4 + 5e-6) / 6, rel=2e-2)
    # a floor on the denominator: a tiny reference does not explode the relative error
    tiny = one(worker, torch.tensor([1e-30]), torch.tensor([2e-30]))
    assert tiny["max_rel"] is None and tiny["near_zero_diffs"] == 1 and tiny["passed"]


def test_shape_and_output_set_differences_fail(worker) -> None:
    s = one(worker, torch.zeros(2, 3), torch.zeros(3, 2))
    assert not s["shape_equal"] and not s["passed"]
    assert numerics.suggest_class([s])[0] is None
    ref = {"trials": [{"seed": 0, "outputs": {"out": torch.ones(2), "aux": torch.ones(1)}}]}
    new = {"trials": [{"seed": 0, "outputs": {"out": torch.ones(2)}}]}
    c = worker.compare(ref, new, False)
    assert not c["passed"] and "output aux missing on the variant side" in c["problems"]
    # renamed parameters of a rewritten module pair up in order
    ref = {"trials": [{"seed": 0, "outputs": {"grad:param:a.w": torch.ones(2)}}]}
    new = {"trials": [{"seed": 0, "outputs": {"grad:param:b.w": torch.ones(2)}}]}
    c = worker.compare(ref, new, False)
    assert c["passed"] and c["stats"][0]["output"] == "grad:param:a.w ~ grad:param:b.w"


def test_suggest_class_rule() -> None:
    base = {
        "output": "out",
        "shape_equal": True,
        "dtype_equal": True,
        "bit_identical": False,
        "nonfinite_positions_match": True,
        "signed_zero_diffs": 0,
        "mismatches": 0,
        "mismatch_share": 0.0,
    }
    assert numerics.suggest_class([{**base, "bit_identical": True}])[0] == "C1"
    assert numerics.suggest_class([base])[0] == "C2"
    assert numerics.suggest_class([base, {**base, "bit_identical": True}])[0] == "C2"
    changed = {**base, "dtype_equal": False, "ref_dtype": "float32", "new_dtype": "float16"}
    assert numerics.suggest_class([changed]) == ("C3", "output dtype changed (out float32→float16)")
    assert numerics.suggest_class([{**base, "signed_zero_diffs": 2}])[0] == "C4"
    local = {**base, "mismatches": 3, "mismatch_share": 0.01}
    spread = {**base, "mismatches": 300, "mismatch_share": 0.5}
    assert numerics.suggest_class([local])[0] == "C4"
    assert numerics.suggest_class([spread])[0] == "C3"
    assert numerics.suggest_class([]) == (None, "no outputs were compared")
    # Works on the stored models too.
    assert numerics.suggest_class([m.ErrorStats(bit_identical=True)])[0] == "C1"


def test_audit_deltas_in_words() -> None:
    base = m.Audit(
        session_id="s",
        arm="baseline",
        workload="w",
        kernel_launches=7,
        operator_count=7,
        allocation_count=12,
        peak_bytes=100 * 2**20,
    )
    new = base.model_copy(
        update={"kernel_launches": 1, "allocation_count": 12, "peak_bytes": 52 * 2**20}
    )
    assert numerics.audit_deltas(base, new) == [
        "kernel count 7 → 1",
        "operators 7 (unchanged)",
        "allocations 12 (unchanged)",
        "peak −48 MiB",
    ]
    assert numerics.audit_deltas({"peak_bytes": 0}, {"peak_bytes": 1536}) == ["peak +1.5 KiB"]
    assert numerics.audit_deltas({"kernel_launches": None}, {"kernel_launches": 3}) == []
    assert numerics.format_bytes(512) == "512 B"
    assert numerics.format_bytes(3 * 2**30) == "3 GiB"


def test_cpu_step_peak_comes_from_the_profiler_not_the_process(worker, monkeypatch) -> None:
    w = worker.Workload(
        lambda x: (x * 2).sum(), [torch.ones(8)], {}, {}, None, torch.device("cpu"), None, "t"
    )
    from measure.torch_worker import audit

    monkeypatch.setattr(audit, "_vmhwm_reset", lambda: False)
    refused = worker.audit_workload(w, False, 0)
    # The process's VmHWM (torch and all) needs clear_refs; without it there is none...
    assert refused["process_peak_bytes"] is None
    assert any("clear_refs" in n for n in refused["notes"])
    assert refused["operator_count"] == 2  # mul, sum
    # ...but the step's own figures come from the profiler's allocation events: 8 floats
    # for x * 2 and one for the sum, a few hundred bytes, not the ~300 MiB of the process.
    assert refused["allocated_bytes"] >= 36 and refused["allocation_count"] >= 2
    assert 36 <= refused["peak_bytes"] <= refused["allocated_bytes"] < 4096
    assert "step peak" in refused["peak_source"]
    monkeypatch.undo()
    allowed = worker.audit_workload(w, False, 0)
    assert allowed["process_peak_bytes"] is None or allowed["process_peak_bytes"] > 10**6


def test_an_audit_does_not_import_the_compiler() -> None:
    """torch.profiler.profile's start imported inductor, dynamo and sympy (hasattr on torch's
    lazy modules): 1 s and ~70 MB of every audit process. The audit's profiler does not."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from measure.torch_worker import audit, workload\n"
        "w = workload.Workload(lambda x: (x * 2).sum(), [torch.ones(8)], {}, {}, None,\n"
        "                      torch.device('cpu'), None, 't')\n"
        "r = audit.audit_workload(w, False, 0)\n"
        "assert r['operator_count'] == 2 and r['peak_bytes'], r\n"
        "names = ('torch._inductor', 'torch._dynamo', 'sympy')\n"
        "print(sorted(m for m in names if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
