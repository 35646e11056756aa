"""Issue 22 item 8 / build 2: a round reports every step before its blocks (each check and
each audit, "n of m", with an ETA once one step has taken its time), and its last report
("done") still names the variants whose check failed, so a live view's last state keeps the
one verdict rule (BROKEN, never FASTER)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_git

from ledger import Ledger
from session import conduct as c
from session import models as m

VALUE = m.Metric(name="value", source=m.MetricSource.REGEX, pattern=r"(?P<value>[0-9.]+)", unit="")


def _patch(repo: Path, tmp_path: Path, text: str, name: str) -> Path:
    (repo / "v.txt").write_text(text)
    patch = tmp_path / f"{name}.diff"
    patch.write_text(run_git(repo, "diff", "--", "v.txt"))
    run_git(repo, "checkout", "--", "v.txt")
    return patch


def _round_with_a_failed_check(make_repo, tmp_path: Path) -> tuple[list[c.Progress], str]:
    """A round of two variants: "same", and "bad", twice as fast but failing its check."""
    repo = make_repo(files={"v.txt": "1.00\n"})
    contract = m.Contract(
        metric=VALUE,
        workloads=[m.Workload(name="read", command="cat v.txt")],
        check='test "$(cat v.txt)" != 0.50',
    )
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        session = m.Session(title="t", repo=str(repo), contract=contract)
        ledger.put(session)
        c.record_baseline(ledger, session, runs=8, warmup=0)
        c.add_variant(ledger, session, "same", ref="HEAD")
        bad = c.add_variant(ledger, session, "bad", patch=_patch(repo, tmp_path, "0.50\n", "b"))
        seen: list[c.Progress] = []
        rnd = c.run_round(ledger, session, min_blocks=6, max_blocks=6, seed=3, progress=seen.append)
    assert rnd.summary["checks"] == {"same": True, "bad": False}
    return seen, bad.id


def test_each_check_is_reported_n_of_m_with_an_eta_once_known(make_repo, tmp_path: Path) -> None:
    seen, _ = _round_with_a_failed_check(make_repo, tmp_path)
    checks = [p for p in seen if p.phase == "check"]
    shown = [p.message for p in checks]
    assert shown[:2] == [
        'check in same: test "$(cat v.txt)" != 0.50 (1 of 2)',
        'check in bad: test "$(cat v.txt)" != 0.50 (2 of 2)',
    ], shown
    assert checks[0].eta_s is None  # nothing to go by yet: none made up
    assert checks[1].eta_s is not None and checks[1].eta_s >= 0


def test_the_rounds_last_report_names_the_failed_checks(make_repo, tmp_path: Path) -> None:
    seen, bad = _round_with_a_failed_check(make_repo, tmp_path)
    blocks = [p for p in seen if p.phase == "round"]
    assert blocks and blocks[-1].failed_checks == [bad]
    done = seen[-1]
    assert done.phase == "done"
    assert done.failed_checks == [bad]  # the last state: still BROKEN
    bad_row = next(x for x in done.comparisons if x.variant_id == bad)
    assert bad_row.verdict is m.Verdict.FASTER  # its statistics alone would say FASTER


MODEL = """
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x):
        return torch.relu(x) * 2.0

def get_inputs():
    return [torch.randn(8, 16)]

def get_init_inputs():
    return [16]
"""

MODEL_NEW = """
class ModelNew(Model):
    def forward(self, x):
        return x.clamp_min(0) * 2.0
"""

QUICK = {"GPUOPT_TORCH_MIN_TIME": "0", "GPUOPT_TORCH_MIN_SAMPLES": "3", "GPUOPT_TORCH_WARMUP": "1"}


@pytest.mark.slow
def test_the_numerical_checks_and_audits_are_reported_n_of_m(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    repo = make_repo(files={"problems/relu.py": MODEL.lstrip()})
    run_git(repo, "checkout", "-q", "-b", "fused")
    (repo / "problems/relu.py").write_text(MODEL.lstrip() + MODEL_NEW)
    run_git(repo, "commit", "-q", "-am", "ModelNew")
    run_git(repo, "checkout", "-q", "main")
    workload = m.Workload.parse("relu=kernelbench:problems/relu.py")
    # Preloaded: the timed runs fork from one interpreter that imported torch (each spawned
    # run imported it anew: 8 imports, 11 of the test's 17 s); the checks are the same.
    workload.env = {**QUICK, "GPUOPT_PRELOAD": "1"}
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        session = m.Session(title="kb", repo=str(repo), contract=m.Contract(workloads=[workload]))
        ledger.put(session)
        baseline = c.record_baseline(ledger, session, runs=2, max_runs=2, warmup=0)
        baseline.reproducibility = m.Reproducibility.REPRODUCIBLE  # two runs cannot show it
        ledger.put(baseline)
        c.add_variant(ledger, session, "fused", ref="fused")
        seen: list[c.Progress] = []
        c.run_round(ledger, session, min_blocks=2, max_blocks=2, seed=7, progress=seen.append)
    checks = [p for p in seen if p.phase == "check"]
    assert [p.message for p in checks] == [
        "numerical check of fused (1 of 3)",
        "audit of the baseline (2 of 3)",
        "audit of fused (3 of 3)",
    ]
    assert checks[0].eta_s is None
    assert all(p.eta_s is not None and p.eta_s >= 0 for p in checks[1:])
