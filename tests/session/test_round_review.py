"""Round loop details found in review: progress forecasts and variants that never run."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_git

from ledger import Ledger
from session import conduct as c
from session import models as m

VALUE = m.Metric(name="value", source=m.MetricSource.REGEX, pattern=r"(?P<value>[0-9.]+)", unit="")


@pytest.fixture
def ledger(tmp_path: Path):
    with Ledger.open(tmp_path / "ledger.db") as led:
        yield led


def _session(ledger: Ledger, repo: Path) -> m.Session:
    contract = m.Contract(metric=VALUE, workloads=[m.Workload(name="read", command="cat v.txt")])
    session = m.Session(title="t", repo=str(repo), contract=contract)
    ledger.put(session)
    return session


def _patch(repo: Path, tmp_path: Path, text: str, name: str) -> Path:
    (repo / "v.txt").write_text(text)
    patch = tmp_path / f"{name}.diff"
    patch.write_text(run_git(repo, "diff", "--", "v.txt"))
    run_git(repo, "checkout", "--", "v.txt")
    return patch


def test_eta_counts_the_blocks_the_minimum_still_asks_for(ledger, make_repo, tmp_path):
    repo = make_repo(files={"v.txt": "1.00\n"})
    session = _session(ledger, repo)
    c.record_baseline(ledger, session, runs=8, warmup=0)
    c.add_variant(ledger, session, "slow", patch=_patch(repo, tmp_path, "1.10\n", "slow"))
    seen: list[c.Progress] = []
    rnd = c.run_round(ledger, session, min_blocks=9, max_blocks=12, seed=1, progress=seen.append)
    assert rnd.blocks == 9
    rounds = [p for p in seen if p.phase == "round"]
    # decided from block 6 on (identical values), but the round goes on to block 9
    assert rounds[6].comparisons[0].verdict is m.Verdict.SLOWER
    for p in rounds[:-1]:
        assert p.eta_s is not None and p.eta_s > 0, (p.block, p.eta_s)
    assert rounds[-1].eta_s == 0


def test_a_variant_whose_runs_all_fail_stops_at_the_minimum_and_says_why(
    ledger, make_repo, tmp_path
):
    repo = make_repo(files={"v.txt": "1.00\n"})
    session = _session(ledger, repo)
    c.record_baseline(ledger, session, runs=8, warmup=0)
    broken = c.add_variant(ledger, session, "broken", patch=_patch(repo, tmp_path, "oops\n", "b"))
    c.add_variant(ledger, session, "same", ref="HEAD")
    rnd = c.run_round(ledger, session, min_blocks=8, max_blocks=15, seed=2)
    assert rnd.status is m.RoundStatus.COMPLETED
    assert rnd.blocks == 8  # nothing to wait for: the other comparison is decided
    comps = {x.variant_id: x for x in ledger.list(m.Comparison, round_id=rnd.id)}
    assert comps[broken.id].verdict is m.Verdict.INCONCLUSIVE and comps[broken.id].n == 0
    assert comps[broken.id].failed_runs == 8
    assert comps[broken.id].blocks_needed is None
    note = next(n for n in rnd.summary["notes"] if "broken" in n)
    assert "8 of 8" in note and "no value" in note.lower(), note
    assert "(last: " in note


def test_budget_forecast_leaves_out_the_one_time_setup(ledger, make_repo):
    # The check takes ~1.5 s once; a block takes a few ms. A 3 s budget leaves room for
    # many blocks, so the round must not stop after block 1 as if each block cost 1.5 s.
    repo = make_repo(files={"v.txt": "1.00\n"})
    contract = m.Contract(
        metric=VALUE, workloads=[m.Workload(name="read", command="cat v.txt")], check="sleep 1.5"
    )
    session = m.Session(title="t", repo=str(repo), contract=contract)
    ledger.put(session)
    c.record_baseline(ledger, session, runs=8, warmup=0)
    c.add_variant(ledger, session, "same", ref="HEAD")
    rnd = c.run_round(ledger, session, min_blocks=2, max_blocks=30, budget_s=3.0, seed=1)
    assert rnd.summary["stop_reason"] == "decided", rnd.summary
    assert rnd.blocks == 12  # decided at the design's first look that can, not every block


def test_a_round_where_nothing_gives_a_value_does_not_claim_it_decided(ledger, make_repo, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("1.0\n")
    repo = make_repo(files={"v.txt": "1.00\n"})
    contract = m.Contract(
        metric=VALUE, workloads=[m.Workload(name="read", command=f"cat {outside}")]
    )
    session = m.Session(title="t", repo=str(repo), contract=contract)
    ledger.put(session)
    c.record_baseline(ledger, session, runs=8, warmup=0)
    c.add_variant(ledger, session, "same", ref="HEAD")
    outside.unlink()  # the workload broke after the baseline
    rnd = c.run_round(ledger, session, min_blocks=3, max_blocks=10, seed=1)
    assert rnd.blocks == 3
    assert rnd.summary["stop_reason"] != "decided"
    assert "no value" in rnd.summary["stop_reason"]


def test_too_few_baseline_runs_are_named_as_such_not_as_noise(ledger, make_repo):
    repo = make_repo(files={"v.txt": "1.00\n"})
    session = _session(ledger, repo)
    base = c.record_baseline(ledger, session, runs=4, max_runs=4, warmup=0)
    # undecided for want of runs: it warns (a round may go on), it never blocks
    assert base.reproducibility is m.Reproducibility.TOO_NOISY
    assert "too few" in base.reproducibility_detail and "10" in base.reproducibility_detail
    assert "noise" not in base.reproducibility_detail.split("too few")[1]


def test_a_check_that_fails_on_the_baseline_too_is_named_as_the_contracts(ledger, make_repo):
    repo = make_repo(files={"v.txt": "1.00\n"})
    contract = m.Contract(
        metric=VALUE,
        workloads=[m.Workload(name="read", command="cat v.txt")],
        check="test -f missing-fixture.txt",
    )
    session = m.Session(title="t", repo=str(repo), contract=contract)
    ledger.put(session)
    c.record_baseline(ledger, session, runs=8, warmup=0)
    c.add_variant(ledger, session, "same", ref="HEAD")
    rnd = c.run_round(ledger, session, min_blocks=6, max_blocks=6, seed=1)
    assert rnd.summary["checks"] == {"same": False}
    assert any("baseline too" in n for n in rnd.summary["notes"]), rnd.summary["notes"]


def test_a_check_that_passes_on_the_baseline_adds_no_note(ledger, make_repo, tmp_path):
    repo = make_repo(files={"v.txt": "1.00\n"})
    contract = m.Contract(
        metric=VALUE,
        workloads=[m.Workload(name="read", command="cat v.txt")],
        check="grep -q 1.00 v.txt",
    )
    session = m.Session(title="t", repo=str(repo), contract=contract)
    ledger.put(session)
    c.record_baseline(ledger, session, runs=8, warmup=0)
    c.add_variant(ledger, session, "other", patch=_patch(repo, tmp_path, "1.50\n", "o"))
    rnd = c.run_round(ledger, session, min_blocks=6, max_blocks=6, seed=1)
    assert rnd.summary["checks"] == {"other": False}
    assert not any("baseline too" in n for n in rnd.summary["notes"])
