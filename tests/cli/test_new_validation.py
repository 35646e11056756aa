"""`gpuopt new` refuses, with one line and exit 2, what a baseline would only find later:
a --repo that is not a git work tree, a --launcher the shell cannot split, a ledger in
the repository (also when --repo names a subfolder). The baseline refuses such a ledger too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_git

from ledger import Ledger
from session import models as m

ROOT = Path(__file__).resolve().parents[2]


def gpuopt(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUOPT_WORKTREES": str(tmp / "wt")}
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def one_line(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert result.returncode == code, result
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def new(tmp: Path, ledger: Path, repo: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return gpuopt(tmp, "--ledger", str(ledger), "new", "--repo", str(repo), "--title", "t",
                  "--workload", "w=true", *extra)  # fmt: skip


def test_repo_must_be_a_git_work_tree(make_repo, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    ledger = tmp_path / "l.db"
    line = one_line(new(tmp_path, ledger, plain))
    assert str(plain) in line and "git work tree" in line
    repo = make_repo()
    line = one_line(new(tmp_path, ledger, repo / ".git"))
    assert "work tree" in line
    assert not ledger.exists()  # nothing was written
    ok = new(tmp_path, ledger, repo)
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("launcher", ["srun --comment 'unclosed", 'env A="b', "srun \\", "  "])
def test_launcher_must_split_as_shell_words(make_repo, tmp_path, launcher):
    repo = make_repo()
    ledger = tmp_path / "l.db"
    line = one_line(new(tmp_path, ledger, repo, "--launcher", launcher))
    assert line.startswith("gpuopt: --launcher")
    assert not ledger.exists()
    ok = new(tmp_path, ledger, repo, "--launcher", "srun -N1 --comment 'a b'")
    assert ok.returncode == 0, ok.stderr


@pytest.mark.slow
def test_a_ledger_anywhere_in_the_work_tree_is_refused(make_repo, tmp_path):
    repo = make_repo(files={"src/a.py": "a = 1\n"})
    for ledger in (repo / "l.db", repo / "src" / "l.db", repo / ".git" / "l.db"):
        line = one_line(new(tmp_path, ledger, repo / "src"))
        assert "inside the repository" in line
        assert not ledger.exists()


def test_baseline_refuses_a_ledger_inside_the_repository(make_repo, tmp_path):
    repo = make_repo(files={"value.txt": "1.0\n"})
    ledger = repo / "l.db"
    with Ledger.open(ledger) as led:  # a session made before `new` checked, or by hand
        s = m.Session(
            title="t", repo=str(repo), contract=m.Contract(workloads=[m.Workload.parse("w=true")])
        )
        led.put(s)
    refs = run_git(repo, "for-each-ref")
    line = one_line(
        gpuopt(tmp_path, "--ledger", str(ledger), "baseline", s.id, "--runs", "2", "--no-telemetry")
    )
    assert "inside the repository" in line
    assert run_git(repo, "for-each-ref") == refs  # no snapshot was taken


def test_a_title_with_a_control_character_is_refused_in_one_line(tmp_path, capsys) -> None:
    from tui.cli import main

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    code = main(["--ledger", str(tmp_path / "l.db"), "new", "--repo", str(repo),
                 "--title", "a\nb", "--workload", "w=true"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--title" in err and "control characters" in err
    assert len(err.strip().splitlines()) == 1
