"""End to end through the engine: a session with a KernelBench workload, its baseline, one
variant that adds ModelNew, and a short round; the round's checks store a correctness
result with error statistics and one audit per arm."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_git

from ledger import Ledger
from session import conduct as c
from session import models as m
from session import torch_checks

MODEL = """
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.lin = nn.Linear(n_in, n_out)

    def forward(self, x):
        h = self.lin(x)
        return torch.relu(h) * 2.0 + 1.0

def get_inputs():
    return [torch.randn(8, 32)]

def get_init_inputs():
    return [32, 16]
"""

MODEL_NEW = """
class ModelNew(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.lin = nn.Linear(n_in, n_out)

    def forward(self, x):
        h = torch.addmm(self.lin.bias, x, self.lin.weight.t())
        return torch.addcmul(torch.ones_like(h), h.clamp_min(0), torch.full_like(h, 2.0))
"""

QUICK = {"GPUOPT_TORCH_MIN_TIME": "0", "GPUOPT_TORCH_MIN_SAMPLES": "3", "GPUOPT_TORCH_WARMUP": "1"}


@pytest.mark.slow
def test_without_preloading_each_run_is_spawned(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GPUOPT_PRELOAD", raising=False)  # the default: not asked for
    repo = make_repo(files={"problems/linear_relu.py": MODEL.lstrip()})
    workload = m.Workload.parse("linrelu=kernelbench:problems/linear_relu.py")
    workload.env = dict(QUICK)
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        session = m.Session(title="kb", repo=str(repo), contract=m.Contract(workloads=[workload]))
        ledger.put(session)
        c.record_baseline(ledger, session, runs=2, max_runs=2, warmup=0)
        refs = ledger.list(m.Run, session_id=session.id)
        assert len(refs) == 2
        assert all(r.status is m.RunStatus.OK and r.launch is m.RunLaunch.PROCESS for r in refs)


@pytest.mark.slow
def test_round_with_a_kernelbench_workload(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A relative PYTHONPATH (a developer's `PYTHONPATH=.`) rightly turns preloading off;
    # the worker needs only torch.
    monkeypatch.delenv("PYTHONPATH", raising=False)
    repo = make_repo(files={"problems/linear_relu.py": MODEL.lstrip()})
    run_git(repo, "checkout", "-q", "-b", "fused")
    (repo / "problems/linear_relu.py").write_text(MODEL.lstrip() + MODEL_NEW)
    run_git(repo, "commit", "-q", "-am", "ModelNew: addmm and addcmul")
    run_git(repo, "checkout", "-q", "main")
    workload = m.Workload.parse("linrelu=kernelbench:problems/linear_relu.py")
    workload.env = {**QUICK, "GPUOPT_PRELOAD": "1"}
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        session = m.Session(title="kb", repo=str(repo), contract=m.Contract(workloads=[workload]))
        ledger.put(session)
        baseline = c.record_baseline(ledger, session, runs=2, max_runs=2, warmup=0)
        refs = [r for r in ledger.list(m.Run, session_id=session.id) if not r.warmup]
        assert len(refs) == 2 and all(r.status is m.RunStatus.OK for r in refs)
        # The value is the worker's median milliseconds per call, not the process's wall time.
        for r in refs:
            line = json.loads(r.stdout_tail.strip().splitlines()[-1])
            assert line["unit"] == "ms" and line["samples"] >= 3
            assert r.value is not None and r.value == line["gpuopt_value"] == line["median"]
            assert r.wall_s is not None and r.value != r.wall_s
        # Forked from one interpreter that imported torch once, each run its own process.
        assert all(r.launch is m.RunLaunch.PRELOADED for r in refs)
        # Two CPU processes cannot show reproducibility (the gate asks for more): this test is
        # about what the round records, so the baseline is declared reproducible here.
        baseline.reproducibility = m.Reproducibility.REPRODUCIBLE
        ledger.put(baseline)
        variant = c.add_variant(ledger, session, "fused", ref="fused")
        rnd = c.run_round(ledger, session, min_blocks=2, max_blocks=2, seed=7)

        assert rnd.summary["checks"] == {"fused": True}
        results = ledger.list(m.CorrectnessResult, session_id=session.id)
        assert {r.workload for r in results} == {"linrelu"}
        r = results[-1]
        assert r.variant_id == variant.id and r.passed
        # five seeds in a row from one drawn at random for this check, recorded after it
        assert r.seeds == list(range(r.seeds[0], r.seeds[0] + 5)) and r.options["seeds_drawn"]
        out = r.stats[0]
        assert out.output == "out" and out.shape_equal and out.new_shape == [8, 16]
        assert out.max_abs is not None and out.max_abs < 1e-4 and out.mismatches == 0
        assert r.suggested_class in (m.OptimizationClass.C1, m.OptimizationClass.C2)
        # the saved outputs (one folder a side) are gone at the round's end, their size said
        assert r.artifacts and not any(Path(p).exists() for p in r.artifacts)
        assert any(
            n.startswith("the checks' saved outputs were removed: ") and "MB" in n
            for n in rnd.summary["notes"]
        )

        base = torch_checks.latest_audits(ledger, session.id, "baseline")["linrelu"]
        new = torch_checks.latest_audits(ledger, session.id, variant.id)["linrelu"]
        assert any(n.endswith(":Model") for n in base.notes)
        assert any(n.endswith(":ModelNew") for n in new.notes)
        assert {o["name"] for o in new.top_ops} >= {"aten::addmm", "aten::addcmul"}
        assert base.operator_count is not None and new.operator_count is not None
        words = torch_checks.variant_audit_deltas(ledger, session.id, variant.id)["linrelu"]
        assert words[0].startswith("kernel count ")

        timed = [x for x in ledger.list(m.Run, round_id=rnd.id) if not x.warmup]
        assert {x.arm for x in timed} == {"baseline", variant.id}
        assert all(x.value is not None and x.value > 0 for x in timed if x.status is m.RunStatus.OK)
        # Each arm's runs timed that arm's own code: nothing of one leaks into the next fork.
        assert all(x.launch is m.RunLaunch.PRELOADED for x in timed)
        for x in timed:
            source = "linear_relu.py:ModelNew" if x.arm == variant.id else 'linear_relu.py:Model"'
            assert source in x.stdout_tail
            line = json.loads(x.stdout_tail.strip().splitlines()[-1])
            if x.arm == variant.id:  # the baseline's inputs, and timed calls re-checked
                assert line["inputs"] == "fresh per call from the reference's get_inputs()"
                assert line["rechecked_calls"] >= 1
        assert ledger.list(m.Comparison, round_id=rnd.id)
