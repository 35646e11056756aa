"""A round with a candidate that raises: its warm-up fails, so it is BROKEN (its check failed
too) with the last lines of its exception, dropped from the later blocks with a note, and
the exports say so. The runs record their worker options and what their figure is."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_git

from ledger import Ledger
from session import conduct as c
from session import models as m
from session.record import build_export, to_markdown

PROBLEM = """
import torch
from torch import nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1.0

def get_inputs():
    return [torch.randn(32, 32)]

def get_init_inputs():
    return []
"""

RAISER = """
class ModelNew(nn.Module):
    def forward(self, x):
        raise RuntimeError("fused kernel: shared memory request of 300 KiB exceeds the limit")
"""

QUICK = {
    "GPUOPT_TORCH_MIN_TIME": "0",
    "GPUOPT_TORCH_MIN_SAMPLES": "3",
    "GPUOPT_TORCH_WARMUP": "1",
    "GPUOPT_PRELOAD": "1",
}


@pytest.mark.slow
def test_a_raising_arm_is_broken_dropped_and_reported(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)  # a relative one turns preloading off
    repo = make_repo(files={"problems/relu.py": PROBLEM.lstrip()})
    run_git(repo, "checkout", "-q", "-b", "raiser")
    (repo / "problems/relu.py").write_text(PROBLEM.lstrip() + RAISER)
    run_git(repo, "commit", "-q", "-am", "ModelNew that raises")
    run_git(repo, "checkout", "-q", "main")
    workload = m.Workload.parse("relu=kernelbench:problems/relu.py")
    workload.env = dict(QUICK)
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        session = m.Session(title="kb", repo=str(repo), contract=m.Contract(workloads=[workload]))
        ledger.put(session)
        baseline = c.record_baseline(ledger, session, runs=2, max_runs=2, warmup=0)
        baseline.reproducibility = m.Reproducibility.REPRODUCIBLE  # two CPU runs cannot show it
        ledger.put(baseline)
        variant = c.add_variant(ledger, session, "raiser", ref="raiser")
        rnd = c.run_round(ledger, session, min_blocks=2, max_blocks=3, seed=3)

        runs = ledger.list(m.Run, round_id=rnd.id)
        mine = [r for r in runs if r.arm == variant.id]
        assert [r.warmup for r in mine] == [True]  # only the warm-up: dropped after it
        assert "shared memory request" in mine[0].error  # the workload's words, not "exit 1"
        (cmp,) = ledger.list(m.Comparison, round_id=rnd.id)
        assert cmp.verdict is m.Verdict.BROKEN  # its numerical check failed as well
        assert "shared memory request of 300 KiB" in cmp.error
        assert "dropped from later blocks" in cmp.note
        notes = rnd.summary["notes"]
        assert any("raiser/relu: FAILED, its warm-up failed" in n for n in notes)
        assert rnd.blocks == 2  # the stop rule does not wait for an arm that gives nothing

        # Every worker option in force is on the run, and the round names the figure.
        base = [r for r in runs if r.arm == "baseline" and not r.warmup]
        opts = base[0].worker["options"]
        assert opts["stat"] == "median" and opts["min_samples"] == 3 and opts["min_time_s"] == 0
        assert opts["env"]["GPUOPT_PRELOAD"] == "1" and opts["env"]["GPUOPT_TORCH_WARMUP"] == "1"
        assert base[0].worker["metric"] == "time per call (ms), median of the calls after warm-up"
        assert base[0].worker["warmup_calls"] >= 5 and "minor_faults_per_call" in base[0].worker
        assert rnd.summary["metrics"]["relu"].startswith("time per call (ms)")
        assert rnd.summary["worker_options"]["relu"]["stat"] == "median"

        data = build_export(ledger, session)
        md = to_markdown(data)
        assert "BROKEN" in md and "shared memory request of 300 KiB" in md
        assert "worker options" in md and "GPUOPT_TORCH_MIN_SAMPLES" in md
        (jc,) = data["rounds"][-1]["comparisons"]
        assert jc["verdict"] == "BROKEN" and "shared memory" in jc["error"]
