"""Two `gpuopt variant add` with one name at once: the one that loses says so (not "the
ledger is damaged") and leaves no snapshot ref or worktree behind.

The race is made certain, not hoped for: the repository's smudge filter, which runs while
the loser checks the baseline out to apply its patch, adds the same name from a second
gpuopt process first.
"""

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
def test_the_loser_of_a_name_race_says_so_and_leaves_no_ref(make_repo, tmp_path):
    repo = make_repo(files={"value.txt": "1.0\n", ".gitattributes": "*.txt filter=race\n"})
    ledger = tmp_path / "l.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUOPT_WORKTREES": str(tmp_path / "wt")}
    armed = tmp_path / "armed"
    smudge = tmp_path / "smudge.sh"
    smudge.write_text(
        "#!/bin/sh\n"
        f"if [ -e '{armed}' ]; then rm '{armed}'\n"
        f"  '{sys.executable}' -m tui --ledger '{ledger}' variant add \"$(cat '{armed}.sid')\" "
        "--name v --ref HEAD >/dev/null 2>&1 </dev/null\nfi\ncat\n"
    )
    smudge.chmod(0o755)
    run_git(repo, "config", "filter.race.smudge", str(smudge))
    run_git(repo, "config", "filter.race.clean", "cat")
    metric = ["--metric", "regex:(?P<value>[0-9.]+)"]
    new = gpuopt(env, "--ledger", str(ledger), "new", "--repo", str(repo), "--title", "t",
                 "--workload", "w=cat value.txt", *metric)  # fmt: skip
    assert new.returncode == 0, new.stderr
    sid = new.stdout.strip()
    base = gpuopt(env, "--ledger", str(ledger), "baseline", sid, "--runs", "2", "--warmup", "0",
                  "--no-telemetry")  # fmt: skip
    assert base.returncode in (0, 1) and "Traceback" not in base.stderr  # 2 runs: unjudged
    patch = tmp_path / "p.patch"
    patch.write_text("--- a/value.txt\n+++ b/value.txt\n@@ -1 +1 @@\n-1.0\n+0.9\n")
    refs_before = set(run_git(repo, "for-each-ref", "--format=%(refname)").split())
    (tmp_path / "armed.sid").write_text(sid)
    armed.touch()
    lost = gpuopt(env, "--ledger", str(ledger), "variant", "add", sid, "--name", "v",
                  "--patch", str(patch))  # fmt: skip
    assert not armed.exists(), "the competing gpuopt never ran"
    assert lost.returncode != 0
    lines = lost.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in lost.stderr, lost.stderr
    assert "damaged" not in lines[0]
    assert "another gpuopt process" in lines[0] and "'v'" in lines[0], lines[0]
    listed = gpuopt(env, "--ledger", str(ledger), "variant", "list", sid, "--json")
    assert listed.stdout.count('"name": "v"') == 1  # the winner's, from --ref HEAD
    refs_after = set(run_git(repo, "for-each-ref", "--format=%(refname)").split())
    assert len(refs_after - refs_before) == 1  # the winner's snapshot ref only
    assert run_git(repo, "worktree", "list").count("\n") == 1
    check = gpuopt(env, "--ledger", str(ledger), "ledger", "check")
    assert check.returncode == 0, check.stdout + check.stderr
