"""A baseline that fails leaves no snapshot ref in the person's repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_git

ROOT = Path(__file__).resolve().parents[2]


def gpuopt(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tui", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.mark.slow
def test_a_failed_baseline_leaks_no_ref(make_repo, tmp_path):
    repo = make_repo(files={"value.txt": "1.0\n"})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUOPT_WORKTREES": str(tmp_path / "wt")}
    ledger = str(tmp_path / "l.db")
    new = gpuopt(env, "--ledger", ledger, "new", "--repo", str(repo), "--title", "t",
                 "--workload", "w=true", "--setup", "exit 3")  # fmt: skip
    assert new.returncode == 0, new.stderr
    refs = run_git(repo, "for-each-ref")
    failed = gpuopt(env, "--ledger", ledger, "baseline", new.stdout.strip(), "--runs", "2",
                    "--no-telemetry")  # fmt: skip
    assert failed.returncode == 1 and "setup command failed" in failed.stderr, failed.stderr
    assert run_git(repo, "for-each-ref") == refs
