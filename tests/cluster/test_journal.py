"""The job's journal and its import, without Slurm: the node's process runs here as a
plain subprocess (`python -m session.cluster.node JOB_DIR`), as a job would run it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cluster_setup import query, sleepy_session, wait_for

from ledger.journal_import import import_entries
from measure.journal import JournalWriter, read_from
from session import models as m
from session.cluster import jobs
from session.cluster.journaling import JournalingLedger
from session.cluster.node import JOURNAL
from session.ledger_access import Ledger


def test_a_line_is_read_only_once_whole(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with JournalWriter(path, "J") as w:
        w.write("row", n=1)
        w.write("row", n=2)
    with path.open("ab") as f:
        f.write(b'{"journal":"J","seq":3,"kind":"row","n":3')  # a line cut by a crash
    got = list(read_from(path, 0))
    assert [e["n"] for e, _ in got] == [1, 2]
    assert list(read_from(path, got[-1][1])) == []  # the cut line: not yet, not half
    with path.open("ab") as f:
        f.write(b"}\n")
    assert [e["n"] for e, _ in read_from(path, got[-1][1])] == [3]
    with JournalWriter(path, "J") as w:  # reopened (a requeued job): numbers go on
        assert w.write("row", n=4)["seq"] == 4


def test_a_rolled_back_write_never_reaches_the_journal(tmp_path: Path) -> None:
    session = m.Session(title="t", repo="/r", contract=m.Contract(workloads=[
        m.Workload(name="w", command="true")]))  # fmt: skip
    with Ledger.open(tmp_path / "l.db") as led, JournalWriter(tmp_path / "j", "J") as w:
        jl = JournalingLedger(led, w, {"node": "n1"})
        with pytest.raises(RuntimeError), jl.write():
            jl.put(session)
            raise RuntimeError("rolled back")
        assert led.get(m.Session, session.id) is None
        assert list(read_from(tmp_path / "j", 0)) == []
        jl.put(session)
        run = m.Run(session_id=session.id, arm="baseline", workload="w")
        jl.put(run)
        lines = [e for e, _ in read_from(tmp_path / "j", 0)]
    assert [e["model"] for e in lines] == ["Session", "Run"]
    assert lines[1]["data"]["place"] == {"node": "n1"}  # each run says where it ran


def _prepared_round(ledger_path: Path, sid: str, **options: object) -> jobs.PreparedJob:
    with Ledger.open(ledger_path) as led:
        session = led.resolve_session(sid)
        return jobs.prepare_job(led, session, "round", dict(options), telemetry=False)


def _as_job(prepared: jobs.PreparedJob) -> jobs.SlurmJob:
    rid = prepared.round.id if prepared.round else None
    return jobs.SlurmJob(prepared.uuid, prepared.dir, "0", prepared.kind, prepared.session_id, rid)


def _node(prepared: jobs.PreparedJob) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    return subprocess.Popen(
        [sys.executable, "-m", "session.cluster.node", str(prepared.dir)], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip


def _state(ledger: Path) -> list[tuple[object, ...]]:
    """Every row of the tables a round writes, with its version: what must not change."""
    rows: list[tuple[object, ...]] = []
    for table in ("rounds", "runs", "comparisons", "hooks"):
        rows += query(ledger, f"SELECT '{table}', id, version, data FROM {table} ORDER BY id")
    return rows


@pytest.mark.slow
def test_the_nodes_journal_imports_once_and_twice_changes_nothing(make_repo, tmp_path) -> None:
    ledger, sid, _ = sleepy_session(make_repo, tmp_path, sleep=0.01)
    with Ledger.open(ledger) as led:
        led.insert_samples([m.TelemetrySample(session_id=sid, t_us=1)])
    prepared = _prepared_round(ledger, sid, min_blocks=4, max_blocks=4, seed=7)
    # the job's copy holds the records, not the telemetry (the bulk no round reads)
    assert query(prepared.dir / "seed.db", "SELECT COUNT(*) FROM telemetry_batches") == [(0,)]
    assert query(ledger, "SELECT COUNT(*) FROM telemetry_batches") == [(1,)]
    node = _node(prepared)
    assert node.wait(timeout=300) == 0, node.stderr.read() if node.stderr else ""
    job = _as_job(prepared)
    with Ledger.open(ledger) as led:
        first = jobs.import_journal(led, job)
        rnd = led.get(m.Round, job.round_id or "")
        assert rnd is not None and rnd.status is m.RoundStatus.COMPLETED
        assert rnd.number == 1 and first.ended == "completed"
        runs = led.list(m.Run, round_id=rnd.id)
    run_lines = {e["data"]["id"] for e, _ in read_from(prepared.dir / JOURNAL, 0)
                 if e.get("model") == "Run"}  # fmt: skip
    assert {r.id for r in runs} == run_lines and len(runs) == 3 * (4 + 1)  # 3 arms, warm-up
    before = _state(ledger)
    with Ledger.open(ledger) as led:
        again = jobs.import_journal(led, job)
    assert again.imported == 0 and _state(ledger) == before
    # The offset lost (or a second ledger importing the same journal from its start):
    # the records are applied as their latest lines say, which they already are.
    with Ledger.open(ledger) as led:
        entries = list(read_from(prepared.dir / JOURNAL, 0))
        report = import_entries(led, prepared.uuid + "-again", [
            ({**e, "journal": prepared.uuid + "-again"}, end) for e, end in entries])  # fmt: skip
    assert report.added == 0 and report.updated == 0 and report.same > 0
    assert _state(ledger) == before


@pytest.mark.slow
def test_a_node_killed_mid_round_leaves_an_interrupted_round_and_its_runs(
    make_repo, tmp_path
) -> None:
    ledger, sid, _ = sleepy_session(make_repo, tmp_path, sleep=0.05)
    prepared = _prepared_round(ledger, sid, min_blocks=30, max_blocks=30, seed=7)
    node = _node(prepared)
    journal = prepared.dir / JOURNAL

    def runs_journaled() -> int:
        return sum(1 for e, _ in read_from(journal, 0) if e.get("model") == "Run")

    wait_for("four runs in the journal", lambda: runs_journaled() >= 4)
    node.send_signal(signal.SIGKILL)  # a node failure: no chance to close anything
    node.wait(timeout=60)
    job = _as_job(prepared)
    with Ledger.open(ledger) as led:
        result = jobs.import_journal(led, job)
        assert result.ended is None  # the job wrote no end line
        jobs.close_left_open(led, job, result, "the node was lost")
        rnd = led.get(m.Round, job.round_id or "")
        assert rnd is not None and rnd.status is m.RoundStatus.INTERRUPTED
        assert any("the node was lost" in n for n in rnd.summary["notes"])
        kept = led.list(m.Run, round_id=rnd.id)
        assert len(kept) == runs_journaled() >= 4
        assert not led.list(m.Round, session_id=sid, status=m.RoundStatus.RUNNING)
    assert not (prepared.dir / "seed.db").exists()  # the job's copy went; its journal stays
    assert json.loads((prepared.dir / "job.json").read_text())["round_id"] == rnd.id


def test_a_job_that_fails_on_its_node_closes_its_round_failed_with_why(make_repo, tmp_path) -> None:
    ledger, sid, _ = sleepy_session(make_repo, tmp_path, sleep=0.01)
    prepared = _prepared_round(ledger, sid, min_blocks=4, max_blocks=4)
    spec = json.loads((prepared.dir / "job.json").read_text())
    spec["options"]["variants"] = ["no-such-variant"]  # refused on the node
    (prepared.dir / "job.json").write_text(json.dumps(spec))
    node = _node(prepared)
    assert node.wait(timeout=300) == 1
    job = _as_job(prepared)
    with Ledger.open(ledger) as led:
        result = jobs.import_journal(led, job)
        assert result.ended == "failed" and "no-such-variant" in result.error
        jobs.close_left_open(led, job, result, None)
        rnd = led.get(m.Round, job.round_id or "")
    assert rnd is not None and rnd.status is m.RoundStatus.FAILED
    assert "no-such-variant" in (rnd.error or "")
