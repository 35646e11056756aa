"""The demo: its repository, its contract, and (opt-in, it runs torch) the headless flow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ledger import Ledger
from session import models as m
from tui.demo.flow import demo_contract
from tui.demo.repo import BRANCHES, DemoError, create_repo

ROOT = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def test_the_demo_repository_has_one_change_per_branch(tmp_path: Path) -> None:
    repo = create_repo(tmp_path / "demo")
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git(repo, "status", "--porcelain") == ""
    for branch in BRANCHES:
        changed = git(repo, "diff", "--name-only", "main", branch).split()
        assert changed == ["softmax.py"], branch
    nomax = git(repo, "show", "no-max:softmax.py")
    assert ".max(" not in nomax and "exp()" in nomax
    assert "torch.softmax" in git(repo, "show", "fused:softmax.py")
    # the same commits every time: fixed authors and dates
    again = create_repo(tmp_path / "demo2")
    assert git(repo, "rev-parse", "fused") == git(again, "rev-parse", "fused")
    # an existing demo repository is reused; any other non-empty folder is refused
    assert create_repo(repo) == repo
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x").write_text("x")
    with pytest.raises(DemoError):
        create_repo(tmp_path / "other")


def test_the_demo_contract_validates_in_both_forms() -> None:
    bench = demo_contract("command")
    assert bench.workloads[0].kind is m.WorkloadKind.COMMAND and bench.check
    assert bench.metric.source is m.MetricSource.JSON and bench.metric.pattern == "gpuopt_value"
    harness = demo_contract("kernelbench")
    assert harness.workloads[0].command == "kernelbench:problem.py"
    assert harness.workloads[0].env["OMP_NUM_THREADS"] == "1"


def test_the_demos_torch_workload_keeps_its_freed_memory() -> None:
    """Without the allocator settings a bimodal arm is advised to take, glibc gave the naive
    softmax's temporaries back on some processes' every call, and a round read the no-op
    control 1.35x SLOWER (2026-12-07): the demo takes its own advice."""
    from session.timing import ALLOCATOR_ADVICE, ALLOCATOR_ENV

    env = demo_contract("kernelbench").workloads[0].env
    assert ALLOCATOR_ENV.items() <= env.items()
    assert all(f"{name}={value}" in ALLOCATOR_ADVICE for name, value in ALLOCATOR_ENV.items())


def test_demo_without_a_terminal_says_to_add_no_tui(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(tmp_path / "l.db"), "demo",
         "--dir", str(tmp_path / "d")],
        cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 2
    assert "--no-tui" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("GPUOPT_DEMO_TEST"),
    reason="about a minute of torch (a too-noisy baseline goes on at the band it supports, "
    "so any machine decides): set GPUOPT_DEMO_TEST=1",
)
def test_the_headless_demo_runs_the_whole_session(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    done = subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(db), "demo", "--no-tui",
         "--dir", str(tmp_path / "d")],
        cwd=ROOT, capture_output=True, text=True, timeout=1200,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GPUOPT_WORKTREES": str(tmp_path / "wt")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("# Decision record")
    with Ledger.open(db, readonly=True) as ledger:
        (session,) = ledger.list(m.Session)
        variants = {v.name: v for v in ledger.list(m.Variant, session_id=session.id)}
        assert set(variants) == {"fused", "no-max", "same"}
        checks = {
            c.variant_id: c.passed for c in ledger.list(m.CorrectnessResult, session_id=session.id)
        }
        assert checks[variants["no-max"].id] is False
        assert checks[variants["fused"].id] is True
        decided = {
            d.variant_id: d.choice for d in ledger.list(m.Disposition, session_id=session.id)
        }
        assert decided[variants["no-max"].id] is m.DispositionChoice.REJECT


def test_the_demo_flow_decides_every_variant(tmp_path: Path, make_repo) -> None:  # type: ignore[no-untyped-def]
    """run_flow (what `gpuopt demo --no-tui` runs) on a repository with the demo's branch
    names whose workload prints fixed numbers: every verdict is certain."""
    pytest.importorskip("session.conduct")
    from conftest import run_git

    from tui.demo.flow import run_flow

    bench = 'import json\nprint(json.dumps({"gpuopt_value": float(open("v.txt").read())}))\n'
    check = 'import sys\nsys.exit(0 if open("ok.txt").read().strip() == "yes" else 1)\n'
    repo = make_repo(
        "fixed", {"bench.py": bench, "check.py": check, "v.txt": "1.0\n", "ok.txt": "yes\n"}
    )
    for branch, value, ok in (
        ("fused", "0.5", "yes"),
        ("no-max", "0.9", "no"),
        ("same", "1.0", "yes"),
    ):
        run_git(repo, "checkout", "-q", "-b", branch, "main")
        (repo / "v.txt").write_text(value + "\n")
        (repo / "ok.txt").write_text(ok + "\n")
        (repo / "note.txt").write_text(branch)
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
    assert out["verdicts"] == {"fused": "FASTER", "no-max": "BROKEN", "same": "SAME"}
    assert out["decisions"]["no-max"] == "reject"
    assert out["decisions"]["same"] == "reject"
    assert out["decisions"]["fused"] in {"keep-default", "need-evidence"}
    assert any("Running the round" in line for line in said), said
    print("\n".join(said))


def test_a_second_demo_resumes_its_session_and_fresh_starts_another(tmp_path: Path) -> None:
    from tui.demo.start import start_session  # the app's path of `gpuopt demo`

    repo = create_repo(tmp_path / "demo")
    with Ledger.open(tmp_path / "l.db") as ledger:
        first, resumed = start_session(ledger, repo, "command")
        assert not resumed
        hyps = ledger.list(m.Hypothesis, session_id=first.id)
        assert len(hyps) == 3  # one per idea, written already: each variant has its own
        again, resumed = start_session(ledger, repo, "command")
        assert resumed and again.id == first.id
        fresh, resumed = start_session(ledger, repo, "command", fresh=True)
        assert not resumed and fresh.id != first.id
        assert len(ledger.session_rows()) == 2


def test_a_headless_demo_that_decided_nothing_exits_1_and_says_why(tmp_path: Path) -> None:
    """Issue 22: after a baseline that blocked the round the demo printed a record saying
    "No variant yet" and exited 0. A drifting baseline no longer blocks (issue 21: the
    paired round cancels drift), so here the demo repository's bench.py (uncommitted: the
    snapshot takes the tree as it is) reports a zero time, which no ratio can be made of."""
    repo = create_repo(tmp_path / "d")
    (repo / "bench.py").write_text("import json\nprint(json.dumps({'gpuopt_value': 0.0}))\n")
    done = subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(tmp_path / "l.db"), "demo", "--no-tui",
         "--workload", "command", "--runs", "10", "--max-runs", "10", "--dir", str(repo)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GPUOPT_WORKTREES": str(tmp_path / "wt")},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    assert done.stdout.startswith("# Decision record")  # what was done is still printed
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("gpuopt: the demo decided nothing: the baseline"), last
    assert "record the baseline again" in last and "run the demo again" in last, last
    assert "Traceback" not in done.stderr


def test_a_new_app_demo_has_one_hypothesis_per_idea(tmp_path: Path) -> None:
    from session.demo_flow import HYPOTHESES, VARIANTS
    from session.hypotheses import hypothesis_for_new_variant
    from tui.demo.start import start_session

    repo = create_repo(tmp_path / "demo")
    with Ledger.open(tmp_path / "l.db") as ledger:
        session, _ = start_session(ledger, repo, "command")
        hyps = ledger.list(m.Hypothesis, session_id=session.id, order_by="created_at, rowid")
        assert [h.title for h in hyps] == [h["title"] for h in HYPOTHESES]
        # the add-variant form's default, branch after branch: each idea its own
        variants: list[m.Variant] = []
        for name, _ref, index in VARIANTS:
            first = hypothesis_for_new_variant(hyps, variants)
            assert first is not None and first.id == hyps[index].id, name
            variants.append(m.Variant.model_construct(name=name, hypothesis_id=first.id))
        # all tested: the newest, as before
        assert hypothesis_for_new_variant(hyps, variants) == hyps[-1]


def test_each_demo_branch_suggests_its_own_hypothesis(tmp_path: Path) -> None:
    """Whatever order the branches are picked in, the form's hypothesis follows the ref."""
    from session.demo_flow import HYPOTHESES, VARIANTS
    from session.hypotheses import hypothesis_for_ref
    from session.refs import list_refs
    from tui.demo.start import start_session

    repo = create_repo(tmp_path / "demo")
    with Ledger.open(tmp_path / "l.db") as ledger:
        session, _ = start_session(ledger, repo, "command")
        hyps = ledger.list(m.Hypothesis, session_id=session.id, order_by="created_at, rowid")
    refs = {r.name: r for r in list_refs(repo)}
    for name, ref, index in reversed(VARIANTS):
        h = hypothesis_for_ref(hyps, [], f"{ref} {refs[ref].subject}")
        assert h is not None and h.title == HYPOTHESES[index]["title"], name
    assert hypothesis_for_ref(hyps, [], "xyz-branch wip") == hyps[0]
