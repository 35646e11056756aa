"""A trace goes beside the ledger whatever its path: a relative --ledger is resolved in
gpuopt's own directory, never in the worktree the worker runs in (the trace was lost)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from measure import harness
from session import models as m
from session.profile.base import traces_dir


def test_a_relative_ledger_puts_traces_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    ledger = SimpleNamespace(path="sub/ledger.db")
    session = m.Session(
        title="t", repo=str(tmp_path), contract=m.Contract(workloads=[m.Workload.parse("a=true")])
    )
    folder = traces_dir(ledger, session)
    assert folder.is_absolute()
    assert folder == tmp_path / "sub" / "ledger.db.artifacts" / session.id / "profiles"


def test_the_worker_gets_every_path_resolved_in_the_callers_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    seen: list[str] = []

    def fake(command: str, cwd, **kw) -> harness.WorkerResult:
        seen.append(command)
        return harness.WorkerResult(ok=False, error="not run")

    monkeypatch.setattr(harness, "run_worker", fake)
    job = {"name": "p", "mode": "profile", "kind": "kernelbench", "spec": "p.py",
           "trace": "rel/t.trace.json", "inputs_from": "base/p.py"}  # fmt: skip
    harness.run_jobs([job], tmp_path / "worktree")
    sent = json.loads(seen[0].split("--jobs ", 1)[1].strip("'"))[0]
    assert sent["trace"] == str(tmp_path / "rel" / "t.trace.json")
    assert sent["inputs_from"] == str(tmp_path / "base" / "p.py")
