"""`gpuopt profile` end to end on the demo repository (real git worktrees, real torch worker):
evidence rows for baseline and variant, the trace beside the ledger, the variant compared with
the baseline, and the residual reading the measured movement (the flag an override)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from method_factory import make_baseline, make_comparison, make_round, open_ledger

from session import models as m
from session.hypotheses import add_hypothesis
from session.profile import run as prof
from session.residuals import suggest_residual
from tui.demo.flow import demo_session
from tui.demo.repo import create_repo

pytestmark = pytest.mark.slow  # its tests take more than a few seconds each

pytest.importorskip("torch")
R = m.ResidualClass


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("profile")
    os.environ["GPUOPT_WORKTREES"] = str(tmp / "worktrees")
    repo = create_repo(tmp / "demo")
    ledger = open_ledger(tmp)
    s = demo_session(repo, kind="kernelbench")
    ledger.put(s)
    b = make_baseline(ledger, s)
    b.snapshot = m.Snapshot(commit=_git(repo, "rev-parse", "main"), ref="refs/heads/main")
    ledger.put(b)
    h, _ = add_hypothesis(
        ledger,
        s,
        title="one fused softmax",
        mechanism="the row is read and written by every pass",
        predicted_evidence="operators 5→1; no 512 KiB intermediate",
    )
    v = m.Variant(
        session_id=s.id,
        name="fused",
        hypothesis_id=h.id,
        snapshot=m.Snapshot(commit=_git(repo, "rev-parse", "fused"), ref="refs/heads/fused"),
    )
    ledger.put(v)
    # The default steps, not one: a row's CPU time is its fastest step, which is what keeps
    # a preempted helper op (a loaded run once read aten::fill_ as dominant) off the top.
    base_runs, others = prof.profile_arm(ledger, s, "baseline")
    assert others == [] and all(r.evidence for r in base_runs), [r.error for r in base_runs]
    done = subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(ledger.path), "profile", s.id,
         "--arm", "fused"],
        capture_output=True, text=True, timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    yield ledger, s, v, b, done
    ledger.close()
    os.environ.pop("GPUOPT_WORKTREES", None)


def test_profiles_are_evidence_with_a_trace_beside_the_ledger(profiled):
    ledger, s, v, _, done = profiled
    assert done.returncode == 0, done.stdout + done.stderr
    base = prof.latest_profiles(ledger, s.id, "baseline")["softmax"]
    var = prof.latest_profiles(ledger, s.id, v.id)["softmax"]
    assert var.variant_id == v.id and base.variant_id is None
    # The dominant op is the table's first (which of the five passes, the CPU's noise decides).
    assert base.summary["dominant"]["name"] == base.summary["ops_by_name"][0]["name"]
    assert base.summary["dominant"]["name"] in base.summary["sequence"]
    assert base.summary["operator_count"] == 5 and var.summary["operator_count"] == 1
    trace = Path(base.path or "")
    assert trace.is_file() and trace.parent == prof.traces_dir(ledger, s)
    assert str(trace).startswith(str(ledger.path) + ".artifacts")


def test_the_command_compares_the_variant_with_the_baseline(profiled):
    _, _, _, _, done = profiled
    out = done.stdout
    assert "operators per step 5 → 1" in out
    assert "dominant operation" in out and "suggested class:" in out
    assert "a suggestion to confirm" in out
    assert "“operators 5→1”: held" in out
    assert "“no 512 KiB intermediate”: held" in out
    assert "ui.perfetto.dev" in out


def test_the_residual_uses_the_measured_movement(profiled):
    ledger, s, v, b, _ = profiled
    r = make_round(ledger, s, b, [v])
    make_comparison(ledger, r, v, workload="softmax", verdict=m.Verdict.FASTER)
    got = suggest_residual(ledger, s, v)
    assert got.suggested is R.AS_PREDICTED, got.reasons
    assert "the profile shows the predicted evidence" in got.explanation
    # The person's flag still wins, and the residual says it was an override of a measurement.
    over = suggest_residual(ledger, s, v, mechanism_moved=False)
    assert over.suggested is R.METRIC_ONLY
    assert "your override" in over.explanation and "measured, it moved as predicted" in (
        over.explanation
    )


def test_the_record_section_and_the_hypothesis_estimates(profiled, tmp_path):
    import importlib.util

    from session.profile.record import estimate_lines, record_markdown

    ledger, s, _, _, _ = profiled
    md = "\n".join(record_markdown(ledger, s, folder=tmp_path))
    assert "## Profiles" in md and "### baseline: softmax" in md and "### fused: softmax" in md
    assert "| operator | calls | self time | share | input shapes |" in md
    assert "| aten::sub | aten::exp | 512 KiB | 1 MiB |" in md  # the pair a fusion removes
    assert "### Mechanism: predicted against observed" in md
    assert "softmax: observed: operators per step 5 → 1" in md
    assert "“no 512 KiB intermediate”: held" in md
    has_png = importlib.util.find_spec("matplotlib") is not None
    assert ("![roofline](" in md) is has_png  # numbers only without matplotlib
    lines = estimate_lines(ledger, s, "exp dominates; fuse sub and exp into one pass")
    assert any("aten::exp" in line and "(Amdahl)" in line for line in lines), lines
    assert any("fusing aten::sub → aten::exp (512 KiB)" in line for line in lines), lines
