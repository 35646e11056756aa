"""A round's runs are stored a block at a time: a gpuopt killed outright (SIGKILL, no
chance to clean up) leaves whole blocks in the ledger, never half of one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ledger import Ledger
from session import models as m

ROOT = Path(__file__).resolve().parents[2]


def gpuopt(ledger: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", "--ledger", str(ledger), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.slow
def test_a_killed_round_keeps_whole_blocks_only(make_repo, tmp_path):
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "l.db"
    made = gpuopt(
        ledger,
        "new",
        "--repo",
        str(repo),
        "--title",
        "t",
        "--workload",
        "read=sleep 0.3; cat value.txt",
        "--metric",
        "regex:(?P<value>[0-9.]+)",
    )
    sid = made.stdout.strip()
    # not about the baseline: its fewest runs (each one 0.3 s); without --max-runs it ran
    # on to 9 or more, until its halves agreed
    base = gpuopt(ledger, "baseline", sid, "--runs", "2", "--max-runs", "2", "--warmup", "0",
                  "--no-telemetry")  # fmt: skip
    assert base.returncode == 0, base.stderr
    assert gpuopt(ledger, "variant", "add", sid, "--name", "v", "--ref", "HEAD").returncode == 0
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tui.cli",
            "--ledger",
            str(ledger),
            "round",
            sid,
            "--min-blocks",
            "40",
            "--max-blocks",
            "40",
            "--no-telemetry",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240  # bounds a failure: block 3 is the event
        while time.monotonic() < deadline:
            time.sleep(0.05)
            with Ledger.open(ledger, readonly=True) as led:
                rounds = led.list(m.Round, session_id=sid)
                if rounds and rounds[0].blocks >= 3:
                    break
        # A block is two runs of 0.3 s: aim the kill after the next block's first run,
        # before its second (stored one by one, that first run would be half a block in
        # the ledger). On a loaded machine it lands anywhere: no half block, wherever.
        time.sleep(0.42)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    with Ledger.open(ledger, readonly=True) as led:
        (rnd,) = led.list(m.Round, session_id=sid)
        runs = [r for r in led.list(m.Run, round_id=rnd.id) if not r.warmup]
    assert rnd.blocks >= 3
    arms: dict[int, set[str]] = {}
    for r in runs:
        arms.setdefault(r.block, set()).add(r.arm)
    assert all(len(a) == 2 for a in arms.values()), arms  # no half block
    assert sorted(arms) == list(range(1, rnd.blocks + 1))  # what the round says it has
