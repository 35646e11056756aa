"""`gpuopt ledger merge`: boxes' ledgers brought into one by their keys (issue 24).

Real ledger files; the sessions are written as the engine writes them (models through
Ledger.put), one box's ledger continued from a copy of the other's, as a team works.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from session import models as m
from session.ledger_access import Ledger
from session.merge import merge_ledgers

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _contract() -> m.Contract:
    return m.Contract(workloads=[m.Workload(name="w", command="true")])


def _baseline(session: m.Session, host: str) -> m.Baseline:
    return m.Baseline(
        id=f"base-{host}",
        session_id=session.id,
        snapshot=m.Snapshot(commit=COMMIT, ref=f"refs/gpuopt/snapshots/{host}"),
        environment=m.EnvironmentFingerprint(hostname=host),
        contract_hash="c",
    )


def _round(session: m.Session, base: m.Baseline, number: int) -> tuple[m.Round, list[m.Run]]:
    rnd = m.Round(
        session_id=session.id, baseline_id=base.id, number=number,
        status=m.RoundStatus.COMPLETED, blocks=2,
    )  # fmt: skip
    runs = [
        m.Run(session_id=session.id, round_id=rnd.id, arm="baseline", workload="w", block=b,
              value=1.0 + b / 10)
        for b in range(2)
    ]  # fmt: skip
    return rnd, runs


def _box_a(path: Path) -> tuple[m.Session, m.Hypothesis]:
    session = m.Session(title="softmax", repo="/srv/repo", contract=_contract())
    base = _baseline(session, "box-a")
    hyp = m.Hypothesis(session_id=session.id, title="fuse the max")
    rnd, runs = _round(session, base, 1)
    with Ledger.open(path) as led:
        led.put(session, base, hyp, rnd, *runs)
        led.insert_samples(
            [m.TelemetrySample(session_id=session.id, run_id=runs[0].id, t_us=5, gpu=0)]
        )
    return session, hyp


def _box_b_from_copy_of(a: Path, b: Path, session: m.Session, hyp: m.Hypothesis) -> m.Round:
    """Box B started from a backup of A's ledger, then measured a round of its own, and
    someone there retitled the hypothesis (a true conflict)."""
    with Ledger.open(a, readonly=True) as led:
        led.backup(b)
    base = _baseline(session, "box-b")
    rnd, runs = _round(session, base, 2)
    other = m.Session(title="layernorm", repo="/home/b/repo", contract=_contract())
    with Ledger.open(b) as led:
        led.put(base, rnd, *runs, other, _baseline(other, "box-b2"))
        led.put(hyp.model_copy(update={"title": "fuse the max and the sum"}))
    return rnd


def _counts(path: Path) -> dict[str, int | None]:
    with Ledger.open(path, readonly=True) as led:
        return led.counts()


def test_merge_keeps_ids_and_numbers_reports_conflicts_and_is_idempotent(tmp_path: Path) -> None:
    a, b, team = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "team.db"
    session, hyp = _box_a(a)
    round_b = _box_b_from_copy_of(a, b, session, hyp)

    first = merge_ledgers(team, [a, b])
    assert first.created
    assert first.conflicts == 1
    (conflict,) = first.reports[1].conflicts
    assert conflict.table == "hypotheses" and conflict.key == (hyp.id,)
    assert "title" in conflict.fields
    with Ledger.open(team, readonly=True) as led:
        # the target's (A's, merged first) record was kept, never overwritten
        stored = led.get(m.Hypothesis, hyp.id)
        assert stored is not None and stored.title == "fuse the max"
        rounds = {r.id: r.number for r in led.list(m.Round, session_id=session.id)}
        assert rounds[round_b.id] == 2 and sorted(rounds.values()) == [1, 2]  # not renumbered
        assert len(led.list(m.Session)) == 2
        assert len(led.list(m.Run)) == 4
        assert len(led.samples(session_id=session.id)) == 1
        machines = {r["title"]: r["machines"] for r in led.session_rows()}
        # the merged hypothesis is found by full-text search (its index kept in step)
        assert [h.id for h in led.search_hypotheses("fuse max")] == [hyp.id]
    assert machines == {"softmax": "box-a, box-b", "layernorm": "box-b2"}
    before = _counts(team)

    again = merge_ledgers(team, [a, b])
    assert not any(r.changed for r in again.reports)
    assert again.conflicts == 1  # still reported, still not overwritten
    assert _counts(team) == before


def test_same_round_number_on_two_boxes_keeps_both_and_says_so(tmp_path: Path) -> None:
    a, b, team = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "team.db"
    session, _ = _box_a(a)
    with Ledger.open(a, readonly=True) as led:
        led.backup(b)
    rnd_a, runs_a = _round(session, _baseline(session, "box-a"), 2)
    base_b = _baseline(session, "box-b")
    rnd_b, runs_b = _round(session, base_b, 2)
    with Ledger.open(a) as led:
        led.put(rnd_a, *runs_a)
    with Ledger.open(b) as led:
        led.put(base_b, rnd_b, *runs_b)
    outcome = merge_ledgers(team, [a, b])
    assert outcome.conflicts == 0
    assert any("rounds numbered 2" in n for n in outcome.reports[1].notes)
    with Ledger.open(team, readonly=True) as led:
        numbers = sorted(r.number for r in led.list(m.Round, session_id=session.id))
    assert numbers == [1, 2, 2]


def test_dry_run_writes_nothing_and_a_new_target_is_not_left_behind(tmp_path: Path) -> None:
    a, team = tmp_path / "a.db", tmp_path / "team.db"
    _box_a(a)
    outcome = merge_ledgers(team, [a], dry_run=True)
    assert sum(outcome.reports[0].added.values()) > 0
    assert not team.exists()
    existing = tmp_path / "existing.db"
    Ledger.open(existing).close()
    empty = _counts(existing)
    merge_ledgers(existing, [a], dry_run=True)
    assert _counts(existing) == empty


def test_a_row_whose_parent_is_missing_is_skipped_with_why(tmp_path: Path) -> None:
    a, team = tmp_path / "a.db", tmp_path / "team.db"
    session, _ = _box_a(a)
    with Ledger.open(a) as led:
        led.db.execute("PRAGMA foreign_keys = OFF")
        orphan = m.Run(
            session_id=session.id, round_id="no-such-round", arm="baseline", workload="w"
        )
        led.put(orphan)
        led.db.execute("PRAGMA foreign_keys = ON")
    outcome = merge_ledgers(team, [a])
    assert any(orphan.id in s and "not copied" in s for s in outcome.reports[0].skipped)
    with Ledger.open(team, readonly=True) as led:
        assert led.get(m.Run, orphan.id) is None
        assert led.check() == []


@pytest.mark.slow
def test_cli_merge_into_the_ledger_in_use_and_conflict_exit(tmp_path: Path) -> None:
    a, b, team = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "team.db"
    session, hyp = _box_a(a)
    _box_b_from_copy_of(a, b, session, hyp)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}

    def gpuopt(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tui", *args], capture_output=True, text=True, env=env
        )

    done = gpuopt("ledger", "merge", str(a), "-o", str(team))
    assert done.returncode == 0, done.stderr
    assert "added" in done.stdout
    done = gpuopt("--ledger", str(team), "ledger", "merge", "--json", str(b))
    assert done.returncode == 1  # a conflict: reported, exit 1
    report = json.loads(done.stdout)
    assert report["conflicts"] == 1 and "hypotheses" in report["sources"][0]["conflicts"][0]
    refused = gpuopt("--ledger", str(team), "ledger", "merge", str(team))
    assert refused.returncode == 2 and "that is the target ledger" in refused.stderr


def test_check_names_the_repository_that_lacks_a_merged_sessions_refs(
    tmp_path: Path, make_repo
) -> None:
    repo = make_repo()
    team = tmp_path / "team.db"
    session = m.Session(title="from box b", repo=str(repo), contract=_contract())
    with Ledger.open(team) as led:
        led.put(session, _baseline(session, "box-b"))
    done = subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(team), "ledger", "check", "--json"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    report = json.loads(done.stdout)
    (line,) = report["repos_lacking_refs"]
    assert line.startswith(f"{repo} lacks 1 snapshot ref(s) of session(s) {session.id}")
    assert "fetch CLONE 'refs/gpuopt/snapshots/*:refs/gpuopt/snapshots/*'" in line


def test_two_boxes_naming_different_variants_alike_is_a_conflict(tmp_path: Path) -> None:
    a, b, team = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "team.db"
    session, _ = _box_a(a)
    with Ledger.open(a, readonly=True) as led:
        led.backup(b)
    snap = m.Snapshot(commit=COMMIT, ref="refs/gpuopt/snapshots/v")
    mine = m.Variant(session_id=session.id, name="fused", snapshot=snap)
    theirs = m.Variant(session_id=session.id, name="fused", snapshot=snap)
    for path, v in ((a, mine), (b, theirs)):
        with Ledger.open(path) as led:
            led.put(v)
    outcome = merge_ledgers(team, [a, b])
    (conflict,) = outcome.reports[1].conflicts
    assert conflict.key == (theirs.id,) and conflict.fields == ["session_id", "name"]
    assert "another variant of the target has the same session_id, name" in str(conflict)
    with Ledger.open(team, readonly=True) as led:
        assert [v.id for v in led.list(m.Variant)] == [mine.id]


def _bisection(repo: str, status: str = "completed") -> object:
    from session.bisect.models import Bisection, Commit, Spec, Status

    return Bisection(
        repo=repo, good="v1", bad="v2",
        commits=[Commit(sha=COMMIT, subject="good"), Commit(sha="f" * 40, subject="bad")],
        spec=Spec(workload="w", command="true"), threshold=0.05, status=Status(status),
    )  # fmt: skip


def test_bisections_merge_by_id_twice_is_a_no_op_and_a_true_conflict_is_reported(
    tmp_path: Path,
) -> None:
    from session.bisect import store
    from session.bisect.models import Status

    a, b, team = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "team.db"
    _box_a(a)
    shared = store.Saved(_bisection("/srv/repo", "running"), None)
    with Ledger.open(a) as led:
        store.save(led, shared)
    with Ledger.open(a, readonly=True) as led:
        led.backup(b)
    mine = store.Saved(_bisection("/home/b/repo"), None)
    with Ledger.open(b) as led:
        store.save(led, mine)
        # box B finished the bisection box A had left running: the same row, other content
        again = store.load(led, shared.record.id)
        again.record = again.record.model_copy(update={"status": Status.COMPLETED})
        store.save(led, again)

    first = merge_ledgers(team, [a, b])
    assert first.reports[0].added.get("bisections") == 1
    assert first.reports[1].added.get("bisections") == 1  # B's own, kept with its id
    (conflict,) = first.reports[1].conflicts
    assert conflict.table == "bisections" and conflict.key == (shared.record.id,)
    assert "status" in conflict.fields
    with Ledger.open(team, readonly=True) as led:
        found = {r.id: r.status.value for r in store.list_all(led)}
    # the target's (A's, merged first) record was kept, never overwritten
    assert found == {shared.record.id: "running", mine.record.id: "completed"}
    before = _counts(team)

    twice = merge_ledgers(team, [a, b])
    assert not any(r.changed for r in twice.reports)
    assert twice.reports[0].same.get("bisections") == 1
    assert twice.conflicts == 1
    assert _counts(team) == before
    with Ledger.open(team, readonly=True) as led:
        assert len(store.list_all(led)) == 2
