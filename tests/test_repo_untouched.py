"""Nothing gpuopt does changes the person's repository: files, index, HEAD, refs, worktrees.

Runs the real command line in subprocesses on a repository with staged, unstaged and
untracked changes; also interrupts a round with SIGINT, as Ctrl+C would.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_git

ROOT = Path(__file__).resolve().parents[1]
METRIC = ["--metric", "regex:(?P<value>[0-9.]+)"]


def gpuopt(env: dict[str, str], ledger: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(ledger), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def cli_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["GPUOPT_WORKTREES"] = str(tmp_path / "worktrees")
    return env


def state(repo: Path) -> dict[str, object]:
    files = {}
    for p in sorted(repo.rglob("*")):
        rel = p.relative_to(repo)
        if rel.parts[0] == ".git" or not p.is_file():
            continue
        files[str(rel)] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mode)
    git = repo / ".git"
    return {
        "files": files,
        "index": (git / "index").read_bytes(),
        "HEAD": (git / "HEAD").read_bytes(),
        "refs": run_git(repo, "for-each-ref", "--format=%(refname) %(objectname)").splitlines(),
        "status": run_git(repo, "status", "--porcelain=v2", "--untracked-files=all"),
        "stash": run_git(repo, "stash", "list"),
        "config": (git / "config").read_bytes(),
    }


def busy_repo(make_repo) -> Path:
    repo = make_repo(files={"value.txt": "1.00\n", "lib.py": "x = 1\n", ".gitignore": "*.tmp\n"})
    (repo / "lib.py").write_text("x = 2\n")
    run_git(repo, "add", "lib.py")  # staged
    (repo / "value.txt").write_text("1.00 # unstaged\n")  # unstaged
    (repo / "notes.txt").write_text("untracked\n")  # untracked
    (repo / "cache.tmp").write_text("ignored\n")
    run_git(repo, "checkout", "-q", "-b", "other")
    run_git(repo, "checkout", "-q", "main")  # a second branch, to see refs stay as they are
    return repo


def assert_untouched(repo: Path, before: dict[str, object]) -> None:
    after = state(repo)
    for key in ("files", "index", "HEAD", "status", "stash", "config"):
        assert after[key] == before[key], key
    old = set(before["refs"])  # type: ignore[arg-type]
    new = set(after["refs"])  # type: ignore[arg-type]
    assert old <= new
    assert all(r.startswith("refs/gpuopt/") for r in new - old)
    assert run_git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert not (repo / ".git" / "worktrees").exists() or not any(
        (repo / ".git" / "worktrees").iterdir()
    )


@pytest.mark.slow
def test_baseline_variants_and_round_leave_the_repository_as_it_was(make_repo, tmp_path):
    repo = busy_repo(make_repo)
    env = cli_env(tmp_path)
    ledger = tmp_path / "ledger.db"
    patch = tmp_path / "p.diff"
    patch.write_text(
        "--- a/value.txt\n+++ b/value.txt\n@@ -1 +1 @@\n-1.00 # unstaged\n+1.50 # patched\n"
    )
    before = state(repo)
    new = gpuopt(
        env,
        ledger,
        "new",
        "--repo",
        str(repo),
        "--title",
        "untouched",
        *METRIC,
        "--workload",
        "read=cat value.txt",
        "--workload",
        "nap=sleep 0.01; echo 3",
        "--check",
        "true",
        "--setup",
        "true",
        "--prepare",
        "true",
        "--cleanup",
        "true",
    )
    assert new.returncode == 0, new.stderr
    sid = new.stdout.strip()
    base = gpuopt(env, ledger, "baseline", sid, "--runs", "8")
    assert base.returncode == 0, base.stderr + base.stdout
    v1 = gpuopt(env, ledger, "variant", "add", sid, "--name", "other", "--ref", "other")
    assert v1.returncode == 0, v1.stderr
    v2 = gpuopt(env, ledger, "variant", "add", sid, "--name", "patched", "--patch", str(patch))
    assert v2.returncode == 0, v2.stderr
    rnd = gpuopt(env, ledger, "round", sid, "--min-blocks", "6", "--max-blocks", "6")
    assert rnd.returncode == 0, rnd.stderr
    assert "SLOWER" in rnd.stdout  # patched reads 1.50 against 1.00
    assert_untouched(repo, before)
    assert not any((tmp_path / "worktrees").iterdir())
    refs = set(state(repo)["refs"]) - set(before["refs"])  # type: ignore[arg-type]
    assert len(refs) == 3  # the baseline and the two variants, each pinned once


@pytest.mark.slow
def test_ctrl_c_interrupts_the_round_and_leaves_no_worktree(make_repo, tmp_path):
    repo = busy_repo(make_repo)
    env = cli_env(tmp_path)
    ledger = tmp_path / "ledger.db"
    new = gpuopt(
        env,
        ledger,
        "new",
        "--repo",
        str(repo),
        "--title",
        "sigint",
        *METRIC,
        "--workload",
        "nap=sleep 0.05; echo 1",
    )
    sid = new.stdout.strip()
    assert gpuopt(env, ledger, "baseline", sid, "--runs", "8").returncode == 0
    assert (
        gpuopt(env, ledger, "variant", "add", sid, "--name", "same", "--ref", "HEAD").returncode
        == 0
    )
    before = state(repo)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tui",
            "--ledger",
            str(ledger),
            "round",
            sid,
            "--min-blocks",
            "200",
            "--max-blocks",
            "400",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if line.startswith("round: block 2/"):
            break
        assert line or proc.poll() is None, "the round ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    db = sqlite3.connect(ledger)
    status, blocks = db.execute("SELECT status, blocks FROM rounds").fetchone()
    runs = db.execute("SELECT COUNT(*) FROM runs WHERE round_id IS NOT NULL").fetchone()[0]
    db.close()
    assert status == "interrupted" and 2 <= blocks < 200
    assert runs >= 2 + 2 * blocks  # warm-ups and completed blocks are all kept
    assert "interrupted" in out
    assert_untouched(repo, before)
    assert not any((tmp_path / "worktrees").iterdir())


def start_round(env: dict[str, str], ledger: Path, sid: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "--ledger", str(ledger), "round", sid,
         "--min-blocks", "200", "--max-blocks", "400", "--no-telemetry"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if line.startswith("round: block 2/"):
            return proc
        assert line or proc.poll() is None, "the round ended before it could be interrupted"
    raise AssertionError("the round never reached block 2")


@pytest.mark.slow
def test_after_a_crash_the_next_round_cleans_up(make_repo, tmp_path):
    repo = busy_repo(make_repo)
    env = cli_env(tmp_path)
    ledger = tmp_path / "ledger.db"
    new = gpuopt(env, ledger, "new", "--repo", str(repo), "--title", "crash", *METRIC,
                 "--workload", "nap=sleep 0.05; echo 1")  # fmt: skip
    sid = new.stdout.strip()
    assert gpuopt(env, ledger, "baseline", sid, "--runs", "8", "--no-telemetry").returncode == 0
    assert (
        gpuopt(env, ledger, "variant", "add", sid, "--name", "same", "--ref", "HEAD").returncode
        == 0
    )
    before = state(repo)
    proc = start_round(env, ledger, sid)
    proc.kill()  # SIGKILL: no cleanup at all
    proc.communicate(timeout=30)
    assert run_git(repo, "worktree", "list").count("\n") == 3  # left behind by the crash
    again = gpuopt(env, ledger, "round", sid, "--min-blocks", "6", "--max-blocks", "6",
                   "--no-telemetry")  # fmt: skip
    assert again.returncode == 0, again.stderr
    db = sqlite3.connect(ledger)
    rows = db.execute("SELECT number, status FROM rounds ORDER BY number").fetchall()
    db.close()
    assert rows == [(1, "interrupted"), (2, "completed")]
    assert_untouched(repo, before)
    assert not any((tmp_path / "worktrees").iterdir())


@pytest.mark.slow
def test_ctrl_c_during_the_baseline(make_repo, tmp_path):
    repo = busy_repo(make_repo)
    env = cli_env(tmp_path)
    ledger = tmp_path / "ledger.db"
    new = gpuopt(env, ledger, "new", "--repo", str(repo), "--title", "b", *METRIC,
                 "--workload", "nap=sleep 0.2; echo 1")  # fmt: skip
    sid = new.stdout.strip()
    before = state(repo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "--ledger", str(ledger), "baseline", sid, "--runs", "50",
         "--no-telemetry"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    db = sqlite3.connect(ledger)
    while time.monotonic() < deadline:
        if db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] >= 2:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    verdict, data = db.execute("SELECT reproducibility, data FROM baselines").fetchone()
    runs = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    db.close()
    assert verdict == "unjudged" and "interrupted after" in data and 2 <= runs < 51
    assert "not judged" in out
    assert_untouched(repo, before)
    assert not any((tmp_path / "worktrees").iterdir())
