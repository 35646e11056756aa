"""Rounds as real Slurm jobs, on the one-node cluster .ci/run starts (scripts/slurm_local.sh).

Nothing here imitates Slurm: sbatch, squeue, scontrol and scancel are the cluster's own.
Without a cluster every test skips with the reason the start script left.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cluster_setup import cli, jobs_of, query, sleepy_session, slurm, wait_for

from measure import slurm as slurm_commands
from measure.journal import read_from

pytestmark = [pytest.mark.slow, pytest.mark.slurm]
__all__ = ["slurm"]  # the fixture, used by name

ROUND = ("--no-telemetry", "--seed", "3", "--json")


def _verdicts(out: str) -> dict[str, str]:
    data = json.loads(out)
    return {c["variant"]: c["verdict"] for c in data["comparisons"]}


def _round_runs(ledger: Path, round_id: str) -> list[str]:
    return [r[0] for r in query(ledger, "SELECT id FROM runs WHERE round_id = ?", round_id)]


def _journal_runs(job: dict[str, Any]) -> set[str]:
    path = Path(job["dir"]) / "journal.jsonl"
    return {e["data"]["id"] for e, _ in read_from(path, 0) if e.get("model") == "Run"}


def _only_job(ledger: Path) -> dict[str, Any]:
    return wait_for("the job in the ledger", lambda: (jobs_of(ledger) or [None])[0])


def test_a_round_through_slurm_gives_the_local_verdicts_and_each_run_once(
    slurm, make_repo, tmp_path
) -> None:
    ledger, sid, _ = sleepy_session(make_repo, tmp_path, sleep=0.02)
    blocks = ("--min-blocks", "6", "--max-blocks", "6")
    local = cli(ledger, "round", sid, *blocks, *ROUND)
    out, err = local.communicate(timeout=300)
    assert local.returncode == 0, err
    remote = cli(ledger, "round", sid, *blocks, *ROUND, "--slurm")
    rout, rerr = remote.communicate(timeout=300)
    assert remote.returncode == 0, rerr
    assert _verdicts(rout) == _verdicts(out) == {"more": "SLOWER", "same": "SAME"}
    assert "RUNNING on" in rerr and "COMPLETED" in rerr  # the job's state, as it went
    data = json.loads(rout)
    assert data["round"]["number"] == 2 and data["job"]["state"] == "COMPLETED"
    runs = _round_runs(ledger, data["round"]["id"])
    assert len(runs) == len(set(runs)) == 3 * (6 + 1)  # 3 arms, 6 blocks and a warm-up
    assert set(runs) == _journal_runs(_only_job(ledger))
    place = json.loads(query(ledger, "SELECT data FROM runs WHERE id = ?", runs[0])[0][0])["place"]
    assert place["slurm_job"] == data["job"]["job_id"] and place["node"]


def test_scancel_mid_round_leaves_an_interrupted_round_with_its_finished_runs(
    slurm, make_repo, tmp_path
) -> None:
    ledger, sid, _ = sleepy_session(make_repo, tmp_path, sleep=0.05)
    login = cli(ledger, "round", sid, "--min-blocks", "30", "--max-blocks", "30", *ROUND,
                "--slurm")  # fmt: skip
    job = _only_job(ledger)
    wait_for("three runs imported", lambda: len(_round_runs(ledger, job["round_id"])) >= 3)
    subprocess.run(["scancel", job["job_id"]], check=True)
    out, err = login.communicate(timeout=300)
    assert login.returncode == 130, err
    data = json.loads(out)
    assert data["round"]["status"] == "interrupted"
    runs = _round_runs(ledger, job["round_id"])
    assert len(runs) >= 3 and set(runs) == _journal_runs(job)
    assert query(ledger, "SELECT COUNT(*) FROM rounds WHERE status = 'running'") == [(0,)]


def test_killing_the_login_side_then_following_again_imports_the_rest(
    slurm, make_repo, tmp_path
) -> None:
    ledger, sid, _ = sleepy_session(make_repo, tmp_path, sleep=0.05)
    login = cli(ledger, "round", sid, "--min-blocks", "12", "--max-blocks", "12", *ROUND,
                "--slurm")  # fmt: skip
    job = _only_job(ledger)
    wait_for("three runs imported", lambda: len(_round_runs(ledger, job["round_id"])) >= 3)
    login.send_signal(signal.SIGKILL)  # the login side is lost; the job goes on
    login.wait(timeout=60)
    partial = len(_round_runs(ledger, job["round_id"]))
    wait_for("the job to end", lambda: not (slurm_commands.job_state(job["job_id"]) or
                                           slurm_commands.JobState("", "GONE")).active,
             timeout=300)  # fmt: skip
    # Rerunning the round first imports the rest of the lost one, never taking it for stale.
    again = cli(ledger, "round", sid, "--min-blocks", "6", "--max-blocks", "6", *ROUND, "--slurm")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert f"of Slurm job {job['job_id']}, which ended while no gpuopt followed it" in err
    assert json.loads(out)["round"]["number"] == 2
    runs = _round_runs(ledger, job["round_id"])
    assert len(runs) == len(set(runs)) == 3 * (12 + 1) > partial
    assert set(runs) == _journal_runs(job)
    status = query(ledger, "SELECT status FROM rounds WHERE id = ?", job["round_id"])
    assert status == [("completed",)]
    follow = cli(ledger, "job", "follow", job["uuid"][:8])  # following it again: no change
    out, _ = follow.communicate(timeout=300)
    assert follow.returncode == 0 and "0 record(s) imported; round 1: completed" in out


def test_a_pending_job_is_shown_as_such_and_cancelled_from_gpuopt(
    slurm, make_repo, tmp_path
) -> None:
    ledger, sid, _ = sleepy_session(make_repo, tmp_path, sleep=0.02)
    login = cli(ledger, "round", sid, *ROUND, "--slurm", "--sbatch-arg=--hold")
    job = _only_job(ledger)

    def listed() -> dict[str, Any] | None:
        done = cli(ledger, "job", "list", "--json")
        out, _ = done.communicate(timeout=120)
        rows = json.loads(out) if done.returncode == 0 else []
        return next((r for r in rows if "PENDING" in r.get("now", "")), None)

    row = wait_for("the job listed as pending", listed)
    assert "(JobHeldUser)" in row["now"]
    cancel = cli(ledger, "job", "cancel", job["uuid"][:8])
    out, err = cancel.communicate(timeout=300)
    assert cancel.returncode == 130, err
    assert "CANCELLED" in out
    rout, rerr = login.communicate(timeout=300)
    assert login.returncode == 130, rerr
    assert "PENDING (JobHeldUser)" in rerr
    rnd = json.loads(rout)["round"]
    assert rnd["status"] == "interrupted" and rnd["blocks"] == 0
    assert any("before it started" in n for n in rnd["summary"]["notes"])


def test_a_contract_with_slurm_settings_runs_the_apps_round_as_a_job(
    slurm, make_repo, tmp_path
) -> None:
    # What the app's round worker calls: progress keeps coming while queued and running.
    from session import models as m
    from session.cluster import jobs
    from session.ledger_access import Ledger

    ledger, sid, _ = sleepy_session(make_repo, tmp_path, sleep=0.01)
    with Ledger.open(ledger) as led:
        session = led.resolve_session(sid)
        session.contract.slurm = m.SlurmSettings(partition="debug")
        led.put(session)
        seen: list[tuple[str, str]] = []
        rnd = jobs.round_where_contracted(
            led, session, min_blocks=6, max_blocks=6, seed=3,
            progress=lambda p: seen.append((p.phase, p.message)),
        )  # fmt: skip
        assert rnd.status is m.RoundStatus.COMPLETED and rnd.summary["slurm"]["job_id"]
        assert {c.verdict.value for c in led.list(m.Comparison, round_id=rnd.id)} == {
            "SLOWER", "SAME"}  # fmt: skip
    phases = [p for p, _ in seen]
    assert "job" in phases and "round" in phases
    assert any("RUNNING on" in text for _, text in seen)


def test_ctrl_c_on_the_login_side_stops_the_job_after_its_current_run(
    slurm, make_repo, tmp_path
) -> None:
    ledger, sid, _ = sleepy_session(make_repo, tmp_path, sleep=0.05)
    login = cli(ledger, "round", sid, "--min-blocks", "30", "--max-blocks", "30", *ROUND,
                "--slurm")  # fmt: skip
    job = _only_job(ledger)
    wait_for("three runs imported", lambda: len(_round_runs(ledger, job["round_id"])) >= 3)
    login.send_signal(signal.SIGINT)
    out, err = login.communicate(timeout=300)
    assert login.returncode == 130, err
    data = json.loads(out)
    assert data["round"]["status"] == "interrupted"
    assert data["job"]["state"] == "COMPLETED"  # it stopped itself, after its run
    statuses = {r[0] for r in query(
        ledger, "SELECT status FROM runs WHERE round_id = ?", job["round_id"])}  # fmt: skip
    assert statuses == {"ok"}  # no run was cut short


def test_a_round_past_its_time_limit_ends_interrupted_with_its_runs(
    slurm, make_repo, tmp_path
) -> None:
    # Slurm's shortest limit is a minute (its check runs about every 30 s after it).
    ledger, sid, _ = sleepy_session(make_repo, tmp_path, sleep=0.3)
    login = cli(ledger, "round", sid, "--min-blocks", "100", "--max-blocks", "100", *ROUND,
                "--slurm", "--time", "1")  # fmt: skip
    out, err = login.communicate(timeout=400)
    assert login.returncode == 130, err
    data = json.loads(out)
    assert data["job"]["state"] == "TIMEOUT" and "TIMEOUT" in err
    assert data["round"]["status"] == "interrupted"
    job = _only_job(ledger)
    runs = _round_runs(ledger, job["round_id"])
    assert len(runs) >= 3 and set(runs) == _journal_runs(job)
    assert query(ledger, "SELECT COUNT(*) FROM rounds WHERE status = 'running'") == [(0,)]


def test_a_jobs_node_samples_and_state_reach_the_telemetry_feed(slurm, make_repo, tmp_path) -> None:
    # What the app's panel is given while the round runs as a job: the job's state and
    # the samples its node journaled (this box has no GPU: the node's host readings).
    import socket

    from session import models as m
    from session.cluster import jobs
    from session.ledger_access import Ledger

    ledger, sid, _ = sleepy_session(make_repo, tmp_path, sleep=0.05)
    fed: list[tuple[list[Any], str]] = []
    with Ledger.open(ledger) as led:
        session = led.resolve_session(sid)
        session.contract.slurm = m.SlurmSettings(partition="debug")
        led.put(session)
        rnd = jobs.round_where_contracted(
            led, session, min_blocks=6, max_blocks=6, seed=3,
            on_telemetry=lambda samples, words: fed.append((samples, words)),
        )  # fmt: skip
        assert rnd.status is m.RoundStatus.COMPLETED
        job_id = rnd.summary["slurm"]["job_id"]
        stored = led.samples(session_id=sid)
    node = socket.gethostname().split(".")[0]
    words = [w for _, w in fed]
    assert any(w.startswith(f"Slurm job {job_id} RUNNING on {node}") for w in words), words
    shown = [s for samples, _ in fed for s in samples]
    assert shown, words  # the node's samples came while the job ran
    assert all(s.cpu_percent is not None for s in shown)  # each tick with the host's readings
    assert {s.t_us for s in shown} <= {s.t_us for s in stored}  # the journal's, imported
    assert words[-1].startswith(f"Slurm job {job_id} COMPLETED") or words[-1].endswith("ended")


def test_a_job_over_before_its_first_state_poll_is_still_said_to_have_run_on_its_node(
    slurm, make_repo, tmp_path
) -> None:
    # Slurm is asked for the state once a second; a job shorter than that went from
    # PENDING to COMPLETED unseen (a CI run saw no RUNNING line). Its journal's start
    # line is the event that always comes: followed only once it is over, it still says
    # where it ran, before it says how it ended.
    import socket

    from session import models as m
    from session.cluster import jobs
    from session.ledger_access import Ledger

    ledger, sid, _ = sleepy_session(make_repo, tmp_path, sleep=0.01)
    with Ledger.open(ledger) as led:
        session = led.resolve_session(sid)
        settings = m.SlurmSettings(partition="debug")
        options = {"min_blocks": 6, "max_blocks": 6, "seed": 3}
        job = jobs.submit_job(
            led, session, "round", options, jobs.job_options(settings), settings=settings
        )
        wait_for(
            "the job to be over",
            lambda: (s := slurm_commands.job_state(job.job_id)) is None or not s.active,
        )
        words: list[str] = []
        states: list[str] = []
        jobs.follow_job(
            led, job, progress=lambda p: words.append(p.message),
            on_state=lambda s: states.append(s.state),
        )  # fmt: skip
    node = socket.gethostname().split(".")[0]
    running = [
        i for i, w in enumerate(words) if w.startswith(f"Slurm job {job.job_id} RUNNING on {node}")
    ]
    assert running, words
    assert states[0] == "RUNNING" and states[-1] == "COMPLETED", states
    over = [i for i, w in enumerate(words) if "COMPLETED" in w]
    assert over and running[0] < over[0], words
