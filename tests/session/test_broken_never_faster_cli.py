"""A failed check is never presented as FASTER by the command line's round table (and its
--json) nor by the headless demo's summary: both say the verdict of session.verdicts.

Fails until tui/commands/round_cmd.py (print_round and the --json dump) and the demo's
summary (tui/demo/flow.py, run_flow) call session.verdicts; the companion tests of the
exports this module's owner wired are tests/session/test_broken_export.py and
test_broken_review.py. Every figure here is a fixed number printed by the workload, so the
speed verdicts are certain: the variant is faster, and its check fails.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from conftest import run_git

from ledger import Ledger
from session import models as m
from tui.cli import main


def _gpuopt(ledger: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["--ledger", str(ledger), *args])
    return code, out.getvalue()


def _session(make_repo, tmp_path: Path) -> tuple[Path, str]:
    """A variant that halves the figure and fails the check (value.txt must read 1.00)."""
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "l.db"
    code, out = _gpuopt(ledger, "new", "--repo", str(repo), "--title", "t", "--workload",
                        "read=cat value.txt", "--metric", "regex:(?P<value>[0-9.]+)",
                        "--check", "grep -qx 1.00 value.txt")  # fmt: skip
    assert code == 0
    sid = out.strip()
    assert _gpuopt(ledger, "baseline", sid, "--runs", "6", "--no-telemetry")[0] == 0
    (repo / "value.txt").write_text("0.50\n")
    patch = tmp_path / "half.diff"
    patch.write_text(run_git(repo, "diff"))
    run_git(repo, "checkout", "-q", "--", ".")
    assert _gpuopt(ledger, "variant", "add", sid, "--name", "half", "--patch", str(patch))[0] == 0
    return ledger, sid


def test_the_round_table_says_broken_not_faster(make_repo, tmp_path: Path) -> None:
    ledger, sid = _session(make_repo, tmp_path)
    code, out = _gpuopt(ledger, "round", sid, "--min-blocks", "6", "--max-blocks", "6",
                        "--no-telemetry")  # fmt: skip
    assert code == 0, out
    with Ledger.open(ledger, readonly=True) as led:  # the statistics alone say FASTER
        (c,) = led.list(m.Comparison)
        assert c.verdict is m.Verdict.FASTER
    rows = [line for line in out.splitlines() if " half " in f" {line} "]
    assert rows, out
    for row in rows:
        assert "FASTER" not in row, row
    assert any("BROKEN" in row and "check exited 1" in row for row in rows), rows
    code, out = _gpuopt(ledger, "round", sid, "--min-blocks", "6", "--max-blocks", "6",
                        "--no-telemetry", "--json")  # fmt: skip
    assert code == 0
    (comp,) = json.loads(out)["comparisons"]
    assert comp["verdict"] == "BROKEN" and comp["speed_verdict"] == "FASTER"
    assert comp["correct"] is False


def test_the_demo_summary_says_broken_not_faster(tmp_path: Path, make_repo) -> None:
    """run_flow, what `gpuopt demo --no-tui` runs, on the demo's branch names with fixed
    figures: no-max is faster and fails its check."""
    from tui.demo.flow import run_flow

    bench = 'import json\nprint(json.dumps({"gpuopt_value": float(open("v.txt").read())}))\n'
    check = 'import sys\nsys.exit(0 if open("ok.txt").read().strip() == "yes" else 1)\n'
    repo = make_repo(
        "fixed", {"bench.py": bench, "check.py": check, "v.txt": "1.0\n", "ok.txt": "yes\n"}
    )
    for branch, value, ok in (("fused", "0.5", "yes"), ("no-max", "0.9", "no"),
                              ("same", "1.0", "yes")):  # fmt: skip
        run_git(repo, "checkout", "-q", "-b", branch, "main")
        (repo / "v.txt").write_text(value + "\n")
        (repo / "ok.txt").write_text(ok + "\n")
        (repo / "note.txt").write_text(branch)  # a commit even where nothing else changes
        run_git(repo, "add", "-A")
        run_git(repo, "commit", "-q", "-m", branch)
    run_git(repo, "checkout", "-q", "main")
    contract = m.Contract(
        metric=m.Metric(name="t", source=m.MetricSource.JSON, pattern="gpuopt_value", unit="ms"),
        workloads=[m.Workload(name="w", command=f"{sys.executable} bench.py")],
        check=f"{sys.executable} check.py",
    )
    said: list[str] = []
    with Ledger.open(tmp_path / "l.db") as ledger:
        session = m.Session(title="fixed", repo=str(repo), contract=contract)
        ledger.put(session)
        out = run_flow(ledger, session, runs=8, min_blocks=6, max_blocks=6, say=said.append)
    assert out["verdicts"]["no-max"] == "BROKEN" and out["verdicts"]["fused"] == "FASTER"
    lines = [line for line in said if "no-max" in line and "ratio" in line]
    assert lines, said
    for line in lines:
        assert "FASTER" not in line and "BROKEN" in line, line
