"""A metric whose figures are zero is refused at the baseline with one clear word (a ratio
to zero is undefined), and any unexpected error inside a round closes it as failed with
its worktrees removed (tester defect: `internal error: ValueError: no data`, round left
"running")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ledger import Ledger
from session import conduct as c
from session import models as m
from session.conduct import round as round_mod

VALUE = m.Metric(name="v", source=m.MetricSource.REGEX, pattern=r"v=(?P<value>[0-9.]+)", unit="")


def _session(ledger: Ledger, repo: Path) -> m.Session:
    contract = m.Contract(metric=VALUE, workloads=[m.Workload(name="w", command="cat v.txt")])
    session = m.Session(title="t", repo=str(repo), contract=contract)
    ledger.put(session)
    return session


def _worktrees(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "worktree", "list"], capture_output=True, text=True, check=True
    ).stdout
    return out.splitlines()


def test_a_zero_metric_is_refused_at_the_baseline_in_words(make_repo, tmp_path):
    repo = make_repo(files={"v.txt": "v=0\n"})
    with Ledger.open(tmp_path / "l.db") as ledger:
        session = _session(ledger, repo)
        b = c.record_baseline(ledger, session, runs=4, max_runs=6, warmup=0)
        assert c.outcome(ledger, session, b) is c.Outcome.NOT_POSITIVE
        assert b.reproducibility is m.Reproducibility.NOT_REPRODUCIBLE
        assert "zero or negative" in b.reproducibility_detail
        assert "undefined" in b.reproducibility_detail
        assert "too noisy" not in b.reproducibility_detail
        assert "noise unknown" not in b.reproducibility_detail
        assert len(ledger.list(m.Run, baseline_id=b.id)) == 4  # decided at the first look
        with pytest.raises(c.GateRefused, match="positive"):
            c.gate_round(ledger, session)


def test_baseline_check_of_zero_figures_is_a_note_not_a_crash():
    rnd = m.Round(session_id="s", baseline_id="b", variant_ids=[], seed=1, threshold=0.02)
    notes: list[str] = []
    round_mod.baseline_check(rnd, {"w": [0.0, 0.0]}, {"w": [0.0, 0.0]}, 0.02, "s", notes)
    assert rnd.baseline_reproduced is None
    assert any("zero or negative" in n for n in notes)


@pytest.mark.slow
def test_any_error_after_the_blocks_closes_the_round_failed(make_repo, tmp_path, monkeypatch):
    repo = make_repo(files={"v.txt": "v=1.0\n"})
    with Ledger.open(tmp_path / "l.db") as ledger:
        session = _session(ledger, repo)
        c.record_baseline(ledger, session, runs=4, max_runs=4, warmup=0)
        c.add_variant(ledger, session, "same", ref="HEAD", probe=True)

        def boom(*a, **k):
            raise ValueError("no data")

        monkeypatch.setattr(round_mod, "_timing_facts", boom)
        with pytest.raises(ValueError, match="no data"):
            c.run_round(ledger, session, min_blocks=2, max_blocks=2)
        (rnd,) = ledger.list(m.Round, session_id=session.id)
        assert rnd.status is m.RoundStatus.FAILED and rnd.ended_at is not None
        assert rnd.error is not None and "no data" in rnd.error
        assert len(_worktrees(repo)) == 1  # only the repository's own


@pytest.mark.slow
def test_a_variant_whose_figures_are_zero_says_why_it_has_no_ratio(make_repo, tmp_path):
    repo = make_repo(files={"v.txt": "v=1.0\n"})
    with Ledger.open(tmp_path / "l.db") as ledger:
        session = _session(ledger, repo)
        c.record_baseline(ledger, session, runs=4, max_runs=4, warmup=0)
        (repo / "v.txt").write_text("v=0\n")
        patch = tmp_path / "zero.diff"
        patch.write_text(
            subprocess.run(
                ["git", "-C", str(repo), "diff"], capture_output=True, text=True, check=True
            ).stdout
        )
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--", "."], check=True)
        c.add_variant(ledger, session, "zero", patch=patch)
        rnd = c.run_round(ledger, session, min_blocks=2, max_blocks=2)
        (comp,) = ledger.list(m.Comparison, round_id=rnd.id)
        assert comp.verdict is m.Verdict.INCONCLUSIVE and comp.n == 0
        assert "2 of 2 blocks gave a zero or negative figure" in comp.note, comp.note


def test_an_error_before_the_first_block_closes_the_round_failed(make_repo, tmp_path, monkeypatch):
    repo = make_repo(files={"v.txt": "v=1.0\n"})
    with Ledger.open(tmp_path / "l.db") as ledger:
        session = _session(ledger, repo)
        c.record_baseline(ledger, session, runs=4, max_runs=4, warmup=0)
        c.add_variant(ledger, session, "same", ref="HEAD", probe=True)

        def boom(*a, **k):
            raise RuntimeError("bad plan")

        monkeypatch.setattr(round_mod, "RoundLoop", boom)
        with pytest.raises(RuntimeError, match="bad plan"):
            c.run_round(ledger, session, min_blocks=2, max_blocks=2)
        (rnd,) = ledger.list(m.Round, session_id=session.id)
        assert rnd.status is m.RoundStatus.FAILED and "bad plan" in (rnd.error or "")
