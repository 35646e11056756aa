"""A time below the roofline floor (the baseline profile's FLOPs and input/output bytes
against the ceilings) never reads FASTER, and keep-default refuses it (issue 20, build 7)."""

from __future__ import annotations

import pytest
from method_factory import (
    make_comparison,
    make_correctness,
    make_session,
    measured_variant,
    open_ledger,
)

from measure import harness
from session import check_words
from session import evidence as ev
from session import models as m
from session.gates import check_disposition
from session.profile.run import summarize
from session.read_model import load_view
from session.verdicts import shown_verdict, verdict_for

# A profile row as a GPU worker reports it: 1 TFLOP and 2 GB in and out per step, probes of
# 700 TFLOP/s and 4 TB/s (taken at 2x: a probe is a lower bound), a 2 ms step.
GPU_ROW = {
    "device": "cuda:0", "device_name": "NVIDIA H200", "dtype": "bfloat16", "step_ms": 2.0,
    "work": {"flops": 1.0e12, "bytes": 9.0e9, "io_bytes": 2.0e9},
    "probe": {"bandwidth_bytes_per_s": 4.0e12, "flops_per_s": 7.0e14, "how": "copy, matmul"},
}  # fmt: skip
FLOOR_MS = max(1.0e12 / 1.4e15, 2.0e9 / 8.0e12) * 1e3  # 0.714 ms: compute bound


def _comparison(ratio: float, workload: str = "e2e") -> m.Comparison:
    return m.Comparison(
        round_id="r", variant_id="v", workload=workload, n=10, ratio=ratio,
        verdict=m.Verdict.FASTER,
    )  # fmt: skip


def test_the_floor_of_a_profile_row_with_known_flops_and_bytes() -> None:
    floor = check_words.roofline_floor(summarize(GPU_ROW, "baseline", "gemm"))
    assert floor is not None
    assert floor.floor_ms == pytest.approx(FLOOR_MS)
    assert floor.least_ratio == pytest.approx(FLOOR_MS / 2.0)
    assert floor.flops == 1.0e12 and floor.io_bytes == 2.0e9
    assert "taken at 2×" in floor.ceilings
    # the per-op byte sum (9 GB, unfused) is not the floor's: a fusion moves less
    assert check_words.roofline_floor({**GPU_ROW, "work": {"bytes": 9.0e9}}) is None


def test_below_the_floor_reads_no_faster_and_says_why() -> None:
    floor = check_words.roofline_floor(summarize(GPU_ROW, "baseline", "gemm"))
    shown = shown_verdict(_comparison(0.3), floor=floor)  # 0.6 ms < 0.714 ms
    assert shown.word == "INCONCLUSIVE" and shown.below_floor
    assert shown.speed is m.Verdict.FASTER
    assert "faster than this machine can compute it: check the candidate" in shown.text
    assert "0.6 ms is below the roofline floor of 0.714 ms" in shown.words
    above = shown_verdict(_comparison(0.4), floor=floor)  # 0.8 ms: possible
    assert above.word == "FASTER" and not above.below_floor and above.text == "FASTER"
    assert shown_verdict(_comparison(0.3)).word == "FASTER"  # no profile: no floor


def test_a_speedup_over_10x_asks_for_a_second_look() -> None:
    shown = shown_verdict(_comparison(0.05))
    assert shown.word == "FASTER" and shown.text == "FASTER · second look"
    assert shown.caution.startswith("20× faster: have a second look")
    assert shown_verdict(_comparison(0.2)).caution == ""


def _profile(tmp_path) -> dict:
    """A real profile of a 256×256 float32 matmul from the worker, on this CPU."""
    (tmp_path / "mm.py").write_text(
        "import torch\nfrom torch import nn\n"
        "class Model(nn.Module):\n"
        "    def forward(self, a, b):\n"
        "        return a @ b\n"
        "def get_inputs():\n"
        "    return [torch.randn(256, 256), torch.randn(256, 256)]\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    job = {"name": "e2e", "mode": "profile", "kind": "kernelbench", "spec": "mm.py", "steps": 2}
    (r,) = harness.run_jobs([job], tmp_path, env={"OMP_NUM_THREADS": "1"}, timeout_s=600)
    assert r.ok, r.error or r.output_tail[-2000:]
    return summarize(r.data, "baseline", "e2e")


@pytest.mark.slow
def test_a_real_profile_floor_reaches_the_view_the_verdict_and_keep_default(tmp_path) -> None:
    summary = _profile(tmp_path)
    assert summary["work"]["flops"] == 2 * 256**3  # the flop counter's matmul
    assert summary["work"]["io_bytes"] == 3 * 256 * 256 * 4  # a, b in; the product out
    with open_ledger(tmp_path) as ledger:
        s = make_session(ledger)
        _b, v, r = measured_variant(ledger, s)
        ev.add_profile(ledger, s, summary, title="profile of e2e (baseline)")
        view = load_view(ledger, s.id)
        floor = view.floors["e2e"]
        # the probe's ceilings, or the step's own rate if higher, at 2×: never above half
        # (exactly half when the step's own rate is the ceiling, as on a loaded machine:
        # floor_ms / step_ms then rounds to 0.5000000000000001)
        assert floor.flops == 2 * 256**3 and 0 < floor.least_ratio <= 0.5 * (1 + 1e-12)
        possible = view.comparisons[r.id][0]
        if possible.ratio is not None and possible.ratio > floor.least_ratio:
            assert verdict_for(view, possible).word == "FASTER"
        # a second round whose variant took half the floor's time
        r2 = m.Round(**{**r.model_dump(), "id": "40d000000002", "number": 2})
        ledger.put(r2)
        c = make_comparison(ledger, r2, v, cid="c0impossible")
        ledger.put(c.model_copy(update={"ratio": floor.least_ratio / 2}))
        make_correctness(ledger, s, v, workload="e2e")
        view = load_view(ledger, s.id)
        shown = verdict_for(view, view.comparisons[r2.id][0])
        assert shown.word == "INCONCLUSIVE" and check_words.BELOW_FLOOR in shown.words
        keep = m.Disposition(
            session_id=s.id, variant_id=v.id, choice=m.DispositionChoice.KEEP_DEFAULT,
            reason="faster", optimization_class=m.OptimizationClass.C1,
        )  # fmt: skip
        refusals = check_disposition(ledger, s, keep)
        assert any(check_words.BELOW_FLOOR in x for x in refusals), refusals
        assert any("not FASTER" in x for x in refusals), refusals
