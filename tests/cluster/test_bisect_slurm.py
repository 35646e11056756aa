"""`gpuopt bisect --slurm`: each step a real Slurm job on the one-node cluster .ci/run
starts (scripts/slurm_local.sh); skipped with its reason without one.

A history of sleep commits with a +30% step: the bisection through Slurm finds the same
commit as the one run here, and every run the nodes journaled is counted once (each step
stored once, each journal imported to its end, a second import a no-op).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from cluster_setup import slurm
from conftest import run_git

from ledger import Ledger
from ledger.journal_import import imported_offset, jobs
from measure.journal import read_from
from session.cluster.jobs import find_job, import_journal

pytestmark = [pytest.mark.slow, pytest.mark.slurm]
__all__ = ["slurm"]  # the fixture, used by name

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = "read d < dur; sleep $d"
STEP_AT = 5


def _history(tmp_path: Path, n: int = 8) -> Path:
    """n commits sleeping 50 ms, then 30% longer from commit STEP_AT on."""
    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    for i in range(n):
        d = round(0.055 * (1.3 if i >= STEP_AT else 1.0) - 0.005, 4)
        (repo / "dur").write_text(f"{d}\n")
        (repo / "n").write_text(f"{i}\n")
        run_git(repo, "add", "-A")
        run_git(repo, "commit", "-q", "-m", f"commit {i}: sleep {d}")
    return repo


def _bisect(
    tmp_path: Path, ledger: Path, repo: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUOPT_WORKTREES": str(tmp_path / "wt")}
    return subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(ledger), "bisect", "--max-blocks", "80",
         "--no-telemetry", "--repo", str(repo), "--good", "HEAD~7", "--bad", "HEAD", *extra,
         "--", WORKLOAD],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def _record(ledger: Path) -> dict:
    with sqlite3.connect(ledger) as conn:
        (row,) = conn.execute("SELECT data FROM bisections").fetchall()
    return json.loads(row[0])


def _culprits(rec: dict) -> list[list[int]]:
    return [c["candidates"] for c in rec["answer"]["changes"]]


def test_bisect_through_slurm_finds_the_local_commit_and_imports_each_run_once(
    tmp_path: Path, slurm: None
) -> None:
    repo = _history(tmp_path)
    here, there = tmp_path / "here.db", tmp_path / "there.db"
    local = _bisect(tmp_path, here, repo)
    assert local.returncode == 0, local.stderr + local.stdout
    out = _bisect(tmp_path, there, repo, "--slurm")
    assert out.returncode == 0, out.stderr + out.stdout
    rec_here, rec_there = _record(here), _record(there)
    assert _culprits(rec_here) == _culprits(rec_there) == [[STEP_AT]]
    assert rec_there["status"] == "completed" and rec_there["slurm"] == []
    assert "RUNNING" in out.stdout or "running" in out.stdout  # the job's state was said

    steps = rec_there["steps"]
    assert [s["number"] for s in steps] == list(range(1, len(steps) + 1))  # each stored once
    with Ledger.open(there) as led:
        mine = [j for j in jobs(led) if j.get("bisection") == rec_there["id"]]
        assert sorted(j["number"] for j in mine) == [s["number"] for s in steps]  # one job each
        journaled = 0
        for j in mine:
            path = Path(j["dir"]) / "journal.jsonl"
            lines = list(read_from(path, 0))
            assert imported_offset(led, j["uuid"]) == path.stat().st_size  # imported to its end
            assert lines[-1][0]["kind"] == "end" and lines[-1][0]["status"] == "completed"
            (step_line,) = [e for e, _ in lines if e["kind"] == "step"]
            runs = [e for e, _ in lines if e["kind"] == "run"]
            assert step_line["step"]["runs"] == len(runs)
            journaled += len(runs)
            again = import_journal(led, find_job(led, j["uuid"]))
            assert again.imported == 0  # a second import changes nothing
            assert imported_offset(led, j["uuid"]) == path.stat().st_size
    assert journaled == sum(s["runs"] for s in steps) > 0
    assert run_git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_step_job_cancelled_while_pending_interrupts_and_resume_measures_it_again(
    tmp_path: Path, slurm: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first step's job is held (PENDING) and scancelled: the bisection ends
    # INTERRUPTED with that step said so; resuming measures it as a new job, and the
    # answer is the commit of the step.
    import threading

    from cluster_setup import query, wait_for

    from measure import slurm as slurm_commands
    from session.bisect import conduct
    from session.cluster.bisect_jobs import SlurmSteps

    monkeypatch.setenv("GPUOPT_WORKTREES", str(tmp_path / "wt"))
    repo = _history(tmp_path)
    ledger = tmp_path / "l.db"
    spec = conduct.spec_of_command(WORKLOAD)
    said: list[str] = []
    with Ledger.open(ledger) as led:
        rec = conduct.plan(repo, "HEAD~7", "HEAD", spec, threshold=0.05, max_blocks=80)
        held = SlurmSteps(led, ["--hold"], telemetry=False, say=said.append)
        out: list[object] = []
        worker = threading.Thread(target=lambda: out.append(conduct.start(led, rec, stepper=held)))
        worker.start()
        rows = wait_for("the step's job", lambda: query(
            ledger, "SELECT value FROM meta WHERE key LIKE 'slurm-job:%'"))  # fmt: skip
        job_id = json.loads(rows[0][0])["job_id"]
        wait_for("PENDING said", lambda: any("PENDING" in s for s in said))
        slurm_commands.cancel(job_id)
        worker.join(timeout=120)
        assert not worker.is_alive()
    first = _record(ledger)
    assert first["status"] == "interrupted"
    (step,) = first["steps"]
    assert step["side"] == "interrupted" and f"Slurm job {job_id} ended CANCELLED" in step["reason"]

    with Ledger.open(ledger) as led:
        again = SlurmSteps(led, [], telemetry=False)
        done = conduct.resume(led, rec.id, stepper=again)
    assert done.status.value == "completed"
    assert [c["candidates"] for c in (done.answer or {})["changes"]] == [[STEP_AT]]
    assert job_id not in {j.job_id for j in again.followed}  # measured by a new job
    numbers = [s.number for s in done.steps]
    assert numbers[0] == 1 and numbers == list(range(1, len(numbers) + 1))
