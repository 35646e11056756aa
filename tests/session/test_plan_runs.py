"""The measurement plan of a recorded session runs as written, in a scratch copy of its
ledger, and reproduces the round's verdict direction on a workload with a large effect.

The workload prints a number from the checkout (`cat value.txt`, read by a regex metric):
the variant halves it, so the effect is large and free of timing noise. Every block of the
plan is pasted into a real bash, the round's block twice (a second paste used to fail on
`git worktree add`: one path for every round).
"""

from __future__ import annotations

import contextlib
import io
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_git

from ledger import Ledger
from session import models as m
from session.record import build_export
from tui.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _gpuopt(ledger: Path, *args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["--ledger", str(ledger), *args])
    assert code == 0, (args, out.getvalue())
    return out.getvalue()


def _record(make_repo, tmp_path: Path) -> tuple[Path, str]:
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "l.db"
    sid = _gpuopt(ledger, "new", "--repo", str(repo), "--title", "halve", "--workload",
                  "read=cat value.txt", "--metric", "regex:(?P<value>[0-9.]+)").strip()  # fmt: skip
    _gpuopt(ledger, "baseline", sid, "--runs", "6", "--no-telemetry")
    (repo / "value.txt").write_text("0.50\n")
    patch = tmp_path / "halve.diff"
    patch.write_text(run_git(repo, "diff"))
    run_git(repo, "checkout", "-q", "--", ".")
    _gpuopt(ledger, "variant", "add", sid, "--name", "half-value", "--patch", str(patch))
    _gpuopt(ledger, "round", sid, "--min-blocks", "6", "--max-blocks", "6", "--seed", "3",
            "--no-telemetry")  # fmt: skip
    return ledger, sid


def _scratch_copy(ledger: Path, to: Path) -> Path:
    """The ledger through SQLite's backup API (never a copy of the .db file alone)."""
    src, dst = sqlite3.connect(ledger), sqlite3.connect(to)
    with dst:
        src.backup(dst)
    src.close()
    dst.close()
    return to


def _paste(block: str, scratch: Path, ledger: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    shim = tmp / "bin"
    shim.mkdir(exist_ok=True)
    (shim / "gpuopt").write_text(
        f"#!{sys.executable}\nimport sys\nfrom tui.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    (shim / "gpuopt").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "TMPDIR": str(scratch),
        "GPUOPT_LEDGER": str(ledger),
    }
    return subprocess.run(["bash", "-e"], input=block + "\n", cwd=scratch, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


@pytest.mark.slow
def test_the_plan_runs_and_reproduces_the_verdict(make_repo, tmp_path: Path) -> None:
    ledger, sid = _record(make_repo, tmp_path)
    with Ledger.open(ledger, readonly=True) as led:
        data = build_export(led, led.resolve_session(sid))
    (rnd,) = data["rounds"]
    (comp,) = rnd["comparisons"]
    assert comp["verdict"] == "FASTER" and comp["ratio"] < 0.6
    plan = {p["figure"]: p["commands"] for p in data["measurement_plan"]}
    copy = _scratch_copy(ledger, tmp_path / "copy.db")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    base_block = "\n".join(
        plan[f"reference results of baseline {data['baselines'][0]['baseline_id']}"]
    )
    round_block = "\n".join(plan["comparisons of round 1"])
    for block in (base_block, round_block, round_block):
        proc = _paste(block, scratch, copy, tmp_path)
        assert proc.returncode == 0, (block, proc.stdout[-2000:], proc.stderr[-2000:])
    trees = sorted(p.name for p in scratch.iterdir())
    assert len(trees) == 3 and len(set(trees)) == 3  # a fresh worktree per paste
    with Ledger.open(copy, readonly=True) as led:
        rounds = led.list(m.Round, session_id=sid, order_by="number")
        assert [r.number for r in rounds] == [1, 2, 3]
        for r in rounds[1:]:
            assert r.seed == 3 and r.min_blocks == 6
            (c,) = led.list(m.Comparison, round_id=r.id)
            assert c.verdict is m.Verdict.FASTER and c.ratio is not None and c.ratio < 0.6
    with Ledger.open(ledger, readonly=True) as led:  # the original is untouched
        assert len(led.list(m.Round, session_id=sid)) == 1
