"""`gpuopt profile`'s refusals: one line, exit 2, nothing stored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from method_factory import make_baseline, make_session, open_ledger

from session import models as m

ROOT = Path(__file__).resolve().parents[2]


def _gpuopt(ledger: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(ledger), "profile", *args],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip


@pytest.mark.slow
def test_refusals_are_one_line(tmp_path):
    with open_ledger(tmp_path) as ledger:
        s = make_session(ledger)
        path = ledger.path
    done = _gpuopt(path, s.id)
    assert done.returncode == 2
    assert "no baseline recorded yet" in done.stderr and len(done.stderr.splitlines()) == 1
    with open_ledger(tmp_path) as ledger:
        make_baseline(ledger, s)
    done = _gpuopt(path, s.id, "--arm", "nosuch")
    assert done.returncode == 2 and "nosuch" in done.stderr
    done = _gpuopt(path, s.id, "--workload", "nosuch")
    assert done.returncode == 2 and "no workload 'nosuch' in the contract" in done.stderr
    done = _gpuopt(path, s.id, "--steps", "0")
    assert done.returncode == 2 and "--steps" in done.stderr
    with open_ledger(tmp_path) as ledger:
        assert ledger.list(m.Evidence, session_id=s.id) == []
