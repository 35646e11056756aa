"""A bisection under GPU telemetry (a replayed scenario): an untrusted run is quarantined,
its block run again, and the answer stands."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_git

from ledger import Ledger
from session.bisect import conduct
from session.telemetry_access import load_scenario, make_monitor


@pytest.mark.slow
def test_a_run_under_hardware_slowdown_is_quarantined_and_its_block_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUOPT_WORKTREES", str(tmp_path / "worktrees"))
    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    for i, d in enumerate([0.05, 0.05, 0.07]):
        (repo / "dur").write_text(f"{d}\n")
        (repo / "n").write_text(f"{i}\n")
        run_git(repo, "add", "-A")
        run_git(repo, "commit", "-q", "-m", f"commit {i}")
    spec = conduct.spec_of_command("read d < dur; sleep $d")
    scenario = load_scenario("hw-slowdown-mid-run")  # HW slowdown (0x8) in one run:
    scenario["events"][0].update(runs=[3], ticks=[0, None])  # the first block's first run
    monitor = make_monitor(None, None, scenario=scenario)
    try:
        with Ledger.open(tmp_path / "l.db") as ledger:
            planned = conduct.plan(repo, "main~2", "main", spec, threshold=0.1, max_blocks=80)
            rec = conduct.start(ledger, planned, monitor=monitor)
    finally:
        monitor.close()
    assert rec.steps[0].kind == "confirm" and rec.steps[0].quarantined == 1
    assert rec.answer is not None
    assert [c["candidates"] for c in rec.answer["changes"]] == [[2]]
