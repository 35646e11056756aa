"""A round that stops at its --budget says so, with "block" singular when it is one
(tester: "completed, 1 blocks")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tui.cli import main


def gpuopt(capsys, ledger: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--ledger", str(ledger), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_a_round_stopped_by_its_budget_says_so(make_repo, tmp_path, capsys):
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "l.db"
    code, out, err = gpuopt(
        capsys, ledger, "new", "--repo", str(repo), "--title", "t",
        "--workload", "w=sleep 0.3; cat value.txt", "--metric", "regex:(?P<value>[0-9.]+)",
        "--unit", "s",
    )  # fmt: skip
    assert code == 0, err
    sid = out.strip()
    code, _, err = gpuopt(capsys, ledger, "baseline", sid, "--runs", "2", "--max-runs", "2",
                          "--warmup", "0", "--no-telemetry")  # fmt: skip
    assert code == 0, err
    assert gpuopt(capsys, ledger, "variant", "add", sid, "--name", "same", "--ref", "HEAD")[0] == 0
    code, out, err = gpuopt(capsys, ledger, "round", sid, "--budget", "0.7", "--no-telemetry")
    head = out.splitlines()[0]
    found = re.search(r"stopped at its time budget, (\d+) block(s?),", head)
    assert found is not None, out
    assert (found.group(2) == "s") == (int(found.group(1)) != 1), head
    assert not re.search(r"\b1 blocks\b", out), out
    assert "stopped: another block would run past --budget" in out
