"""The worker command the engine runs, and the worker's failures, in real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from torch_scenarios import torch_repo_fixture  # noqa: F401  (the torch_repo fixture)

from ledger import Ledger
from measure import harness
from session import models as m
from session import torch_checks


def test_split_spec_accepts_the_prefix_or_not() -> None:
    assert harness.split_spec("torch", "torch:pkg.mod:bench") == ("torch", "pkg.mod:bench")
    assert harness.split_spec("torch", "pkg.mod:bench") == ("torch", "pkg.mod:bench")
    assert harness.split_spec("kernelbench", "kernelbench:p/x.py") == ("kernelbench", "p/x.py")
    with pytest.raises(harness.HarnessError, match="MODULE:CALLABLE"):
        harness.split_spec("torch", "torch:justamodule")
    with pytest.raises(harness.HarnessError, match="not a torch workload"):
        harness.split_spec("command", "echo hi")
    with pytest.raises(harness.HarnessError, match="needs a target"):
        harness.split_spec("kernelbench", "kernelbench:")


def test_workload_command_shape() -> None:
    cmd, source, key = harness.workload_command("torch", "torch:a.b:c", python="/x y/python3")
    assert (source, key) == ("json", "gpuopt_value")
    assert cmd.startswith("'/x y/python3' -B ") or cmd.startswith("/x y/python3 -B ")
    assert str(harness.WORKER) in cmd and " time --kind torch --spec a.b:c" in cmd
    train, _, _ = harness.workload_command("kernelbench", "p.py", training=True)
    assert train.endswith("--training") and sys.executable in train
    # A command given as the interpreter ("uv run python") is kept as written.
    uv, _, _ = harness.workload_command("torch", "a:b", python="uv run python")
    assert uv.startswith("uv run python -B ")


@pytest.mark.slow
def test_a_timed_replicate_prints_one_json_value(torch_repo) -> None:
    """The exact command the engine runs (bash -c in the worktree); a training path here,
    a KernelBench file in the end-to-end test."""
    cmd, _, key = harness.workload_command(
        "torch", "torch:kern.s_train:bench", training=True, options=["--min-time", "0"]
    )
    proc = subprocess.run(
        ["bash", "-c", cmd],
        cwd=torch_repo.variant_dir,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert len(lines) == 1
    line = lines[0]
    assert line[key] > 0 and line["min"] <= line[key] <= line["max"]
    assert line["device"] == "cpu" and line["dtype"] == "float32"
    assert line["clock"] == "perf_counter" and line["samples"] >= 10
    assert line["unit"] == "ms" and line["warmup"] == 3 and line["l2_flush_bytes"] == 0
    assert line["training"] is True and line["source"] == "kern.s_train:bench"
    assert line["stat"] == "median" and line[key] == line["median"]
    # The worktree is left as it was: no __pycache__ written by the worker.
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"],
        cwd=torch_repo.variant_dir,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""


@pytest.mark.slow
def test_a_replicate_can_report_its_fastest_call(torch_repo) -> None:
    """--stat min (GPUOPT_TORCH_STAT=min): for CPUs shared with other tenants."""
    cmd, _, key = harness.workload_command("torch", "torch:kern.s_train:bench")
    proc = subprocess.run(
        ["bash", "-c", cmd],
        cwd=torch_repo.variant_dir,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GPUOPT_TORCH_STAT": "min", "GPUOPT_TORCH_MIN_TIME": "0"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = json.loads(proc.stdout.strip().splitlines()[-1])
    assert line["stat"] == "min" and line[key] == line["min"] <= line["median"]


@pytest.mark.slow
def test_worker_failures_are_one_clear_line(torch_repo, tmp_path) -> None:
    workloads = [
        m.Workload.parse("a=torch:kern.nothing_here:bench"),
        m.Workload.parse("b=kernelbench:problems/none.py"),
        m.Workload.parse("c=torch:kern.s_fast:missing"),
        m.Workload.parse("d=torch:kern.s_fast:bench"),
    ]
    session = m.Session(
        title="t", repo=str(torch_repo.repo), contract=m.Contract(workloads=workloads)
    )
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        ledger.put(session)
        audits = torch_checks.audit_arm(ledger, session, "baseline", torch_repo.base_dir)
        assert ledger.list(m.Audit, session_id=session.id) == audits
    assert [a.workload for a in audits] == ["a", "b", "c", "d"]
    assert "cannot import kern.nothing_here" in audits[0].error
    assert "no problem file problems/none.py" in audits[1].error
    assert "has no attribute missing" in audits[2].error
    assert audits[0].operator_count is None and audits[0].peak_bytes is None
    assert audits[3].error == "" and audits[3].operator_count == 5
    timed = harness.run_worker("sleep 5", tmp_path, timeout_s=0.5)
    assert not timed.ok and "ran past 0.5 s" in timed.error and timed.wall_s < 4
    silent = harness.run_worker("echo not json", tmp_path)
    assert not silent.ok and silent.error == "the worker printed no result line"
    died = harness.run_worker("echo oops >&2; exit 3", tmp_path)
    assert not died.ok and died.exit_code == 3 and "status 3: oops" in died.error
