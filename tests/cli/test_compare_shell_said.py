"""Issue 21, item 5: compare and round say what their times hold of the shell. A round's
workload with shell syntax runs through bash, whose start-up is measured and said as
included (not subtracted); a plain-words workload runs directly, and that is said too,
in the same round. Real git repository, real ledger, real processes, in-process CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tui.cli import main


def _repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    (repo / "README").write_text("x\n")
    git = ["git", "-C", str(repo)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run(
        [*git, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"], check=True
    )
    return repo


@pytest.mark.slow
def test_a_round_says_which_workloads_pay_the_shell_and_which_run_directly(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("GPUOPT_WORKTREES", str(tmp_path / "wt"))
    repo = _repo(tmp_path)
    led = ["--ledger", str(tmp_path / "l.db")]
    assert main([*led, "new", "--repo", str(repo), "--title", "t", "--workload", "plain=true",
                 "--workload", "shelled=true && true"]) == 0  # fmt: skip
    sid = capsys.readouterr().out.strip()
    assert main([*led, "baseline", sid, "--no-telemetry"]) in (0, 1)
    assert main([*led, "variant", "add", sid, "--name", "same", "--ref", "HEAD"]) == 0
    capsys.readouterr()
    main([*led, "round", sid, "--min-blocks", "6", "--max-blocks", "6", "--no-telemetry"])
    out = capsys.readouterr().out
    text = " ".join(out.split())
    assert "shelled: run through bash" in text
    assert "is included in every figure, not subtracted" in text
    assert "plain: run directly, without a shell" in text  # was: nothing said of it
    main([*led, "round", sid, "--min-blocks", "6", "--max-blocks", "6", "--no-telemetry",
          "--json"])  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    shell = doc["round"]["summary"]["shell"]
    assert shell["plain"] == {"shell": None}
    assert shell["shelled"]["shell"] == "bash" and shell["shelled"]["shell_cost_s"] > 0
