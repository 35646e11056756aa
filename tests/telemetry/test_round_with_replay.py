"""A real round (shell workloads, git worktrees) watched by a replayed GPU that slows down
in the middle of a measured run: that run is quarantined and its block run again."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger import Ledger
from measure.telemetry import make_monitor
from measure.telemetry.replay import load_scenario
from session import conduct as c
from session import models as m

VALUE = m.Metric(name="value", source=m.MetricSource.REGEX, pattern=r"(?P<value>[0-9.]+)", unit="")


@pytest.mark.slow
def test_hw_slowdown_mid_run_quarantines_the_run_and_reruns_the_block(
    tmp_path: Path, make_repo
) -> None:
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = Ledger.open(tmp_path / "ledger.db")
    session = m.Session(title="t", repo=str(repo), contract=m.Contract(
        metric=VALUE, workloads=[m.Workload(name="read", command="sleep 0.3; cat value.txt")],
    ))  # fmt: skip
    ledger.put(session)
    c.record_baseline(ledger, session, runs=8, warmup=0)
    c.add_variant(ledger, session, "same", ref="HEAD")

    # The shipped scenario slows the GPU down from the second sample of its run 2 on. Here
    # runs 1 and 2 are the round's warm-ups, so aim it at run 4: block 1's second run.
    scenario = load_scenario("hw-slowdown-mid-run")
    scenario["events"][0]["runs"] = [4]
    sink_ledger = Ledger.open(tmp_path / "ledger.db")  # the writer thread's own connection
    monitor = make_monitor(sink_ledger.insert_samples, session.id, scenario=scenario)
    try:
        rnd = c.run_round(ledger, session, min_blocks=2, max_blocks=2, seed=3, monitor=monitor)
    finally:
        monitor.close()

    runs = ledger.list(m.Run, round_id=rnd.id)
    block1 = [r for r in runs if r.block == 1]
    assert [r.attempt for r in block1] == [0, 0, 1, 1]
    slowed = block1[1]
    assert slowed.trust is m.Trust.UNTRUSTED
    assert slowed.status is m.RunStatus.QUARANTINED
    assert slowed.trust_reasons[0].startswith("HW slowdown in ")
    assert slowed.telemetry["gpus"]["0"]["name"] == "NVIDIA H200 (replay)"
    assert block1[0].status is m.RunStatus.QUARANTINED  # its block-mate, out of the stats
    assert [r.status for r in block1[2:]] == [m.RunStatus.OK] * 2  # the block run again
    assert all(r.trust is m.Trust.CLEAN for r in block1[2:])
    assert rnd.blocks == 2
    assert ledger.list(m.Comparison, round_id=rnd.id)[0].n == 2

    samples = ledger.samples(run_id=slowed.id)
    gpu = [s for s in samples if s.source == "replay"]
    assert len(gpu) >= 2 and gpu[0].clock_reasons == 0 and gpu[-1].clock_reasons == 8
    assert all(slowed.started_us - 500_000 <= s.t_us <= slowed.ended_us + 500_000 for s in gpu)
    host = [s for s in samples if s.source == "host"]
    assert host and any(s.rss_bytes for s in host)  # the run's process tree was followed
    sink_ledger.close()
    ledger.close()
