"""Conducting baselines, variants and rounds on real git repositories and processes."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import run_git

from ledger import Ledger
from measure.monitor import RunObservation
from measure.worktrees import list_worktrees
from session import conduct as c
from session import models as m

VALUE = m.Metric(name="value", source=m.MetricSource.REGEX, pattern=r"(?P<value>[0-9.]+)", unit="")


def make_session(ledger: Ledger, repo: Path, **contract: object) -> m.Session:
    fields: dict[str, Any] = {
        "metric": VALUE,
        "workloads": [m.Workload(name="read", command="cat value.txt")],
    }
    fields.update(contract)
    session = m.Session(title="t", repo=str(repo), contract=m.Contract(**fields))
    ledger.put(session)
    return session


@pytest.fixture
def ledger(tmp_path: Path):
    with Ledger.open(tmp_path / "ledger.db") as led:
        yield led


@pytest.fixture
def repo(make_repo) -> Path:
    return make_repo(files={"value.txt": "1.00\n"})


def patch_file(repo: Path, tmp_path: Path, text: str, name: str) -> Path:
    original = (repo / "value.txt").read_text()
    (repo / "value.txt").write_text(text)
    patch = tmp_path / f"{name}.diff"
    patch.write_text(run_git(repo, "diff", "--", "value.txt"))
    (repo / "value.txt").write_text(original)
    return patch


class Scripted:
    """A monitor that calls given runs untrusted (by order of run_finished calls)."""

    def __init__(self, untrusted: set[int] | None = None, interrupt_at: int | None = None):
        self.untrusted = untrusted or set()
        self.interrupt_at = interrupt_at
        self.started: list[tuple[str, int | None]] = []
        self.finished = 0

    def run_started(self, run_id: str, pid: int | None) -> None:
        self.started.append((run_id, pid))

    def run_finished(self, run_id: str) -> RunObservation:
        self.finished += 1
        if self.finished == self.interrupt_at:
            raise KeyboardInterrupt
        if self.finished in self.untrusted:
            return RunObservation(
                trust=m.Trust.UNTRUSTED, reasons=["HW slowdown"], deltas={"e_j": 1}
            )
        return RunObservation(trust=m.Trust.CLEAN, reasons=[])


# ------------------------------------------------------------------------------ baseline


def test_baseline_records_reference_runs_and_reset_procedure(ledger, repo, tmp_path, monkeypatch):
    secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCY-SECRET-VALUE"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    (repo / "value.txt").write_text("2.50\n")  # uncommitted: the snapshot must carry it
    session = make_session(
        ledger,
        repo,
        workloads=[
            m.Workload(name="read", command="cat value.txt"),
            m.Workload(name="twice", command="echo 5"),
        ],
        hooks=m.Hooks(prepare="true"),
    )
    seen: list[c.Progress] = []
    # identical values: decided at the first look, so the minimum is all that runs
    b = c.record_baseline(ledger, session, runs=10, warmup=1, progress=seen.append)
    assert b.reference == {"read": 2.5, "twice": 5.0}
    assert b.reproducibility is m.Reproducibility.REPRODUCIBLE, b.reproducibility_detail
    assert b.environment.variables == {"OMP_NUM_THREADS": "3"}
    assert b.snapshot.dirty and b.snapshot.commit in b.reset_procedure
    assert "# before every run:\ntrue" in b.reset_procedure  # pasteable (session.commands)
    assert ledger.get(m.Baseline, b.id) == b
    runs = ledger.list(m.Run, baseline_id=b.id)
    assert len(runs) == 2 * (10 + 1)
    assert sum(r.warmup for r in runs) == 2
    assert [r.workload for r in runs[:4]] == ["read", "twice", "read", "twice"]  # interleaved
    assert all(r.status is m.RunStatus.OK and r.round_id is None for r in runs)
    hooks = ledger.list(m.HookRecord, session_id=session.id)
    assert len(hooks) == 22 and {h.kind for h in hooks} == {m.HookKind.PREPARE}
    assert seen[-1].phase == "done" and seen[-1].runs_done == 22
    assert list_worktrees(repo) == [repo]
    ledger.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.glob("ledger.db*"))
    assert secret.encode() not in blob
    assert b"OMP_NUM_THREADS" in blob


def test_baseline_id_is_stable_for_code_machine_and_contract(ledger, repo):
    session = make_session(ledger, repo)
    env = m.EnvironmentFingerprint(hostname="h", cpu_count=2)
    a = c.baseline_id("a" * 40, env, "c1")
    assert a == c.baseline_id("a" * 40, env.model_copy(), "c1") and len(a) == 12
    assert a != c.baseline_id("b" * 40, env, "c1")
    assert a != c.baseline_id("a" * 40, env, "c2")
    assert a != c.baseline_id("a" * 40, env.model_copy(update={"hostname": "g"}), "c1")
    b = c.record_baseline(ledger, session, runs=8, warmup=0)
    assert b.id == c.baseline_id(b.snapshot.commit, b.environment, session.contract.stable_hash())


def test_a_drifting_baseline_warns_and_a_paired_round_goes_on(ledger, repo, tmp_path):
    """Issue 21: drift with no cause the telemetry names never dead-ends a round; the round
    says the baseline's absolute figures are unreliable and untrusts no verdict for it."""
    counter = tmp_path / "n"
    drift = f"n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}; echo $n"
    session = make_session(ledger, repo, workloads=[m.Workload(name="drift", command=drift)])
    b = c.record_baseline(ledger, session, runs=10, warmup=0)
    assert b.reproducibility is m.Reproducibility.NOT_REPRODUCIBLE
    assert b.reproducibility_detail.startswith("drifting at ±2% (a warning")
    assert "drift: drifting" in b.reproducibility_detail
    assert "the later half was slower" in b.reproducibility_detail
    assert len(ledger.list(m.Run, baseline_id=b.id)) == 10  # decided at the first look
    c.add_variant(ledger, session, "same", ref="HEAD")
    rnd = c.run_round(ledger, session, min_blocks=6, max_blocks=6, seed=1)
    assert rnd.status is m.RoundStatus.COMPLETED and rnd.blocks == 6
    assert rnd.summary["baseline_reference_unreliable"] is True
    assert rnd.baseline_reproduced is None  # an unreliable reference untrusts nothing
    assert any("absolute figures are unreliable" in n for n in rnd.summary["notes"])


def test_a_workload_that_fails_its_warm_up_stops_the_baseline_at_once(ledger, repo):
    session = make_session(
        ledger,
        repo,
        workloads=[
            m.Workload(name="read", command="cat value.txt"),
            m.Workload(name="broken", command="echo no such file >&2; exit 3"),
        ],
    )
    with pytest.raises(c.WorkloadBroken, match=r"broken: its warm-up run failed \(exit 3\)") as e:
        c.record_baseline(ledger, session, runs=10)
    assert "not noisy" in str(e.value) and "no such file" in str(e.value)
    assert isinstance(e.value, c.ConductError)  # failed work, exit 1
    (b,) = ledger.list(m.Baseline, session_id=session.id)
    assert len(ledger.list(m.Run, baseline_id=b.id)) == 2  # the two warm-ups, nothing more
    assert b.reproducibility is m.Reproducibility.UNJUDGED
    assert "broken" in b.reproducibility_detail and "repair the noise" not in str(e.value)


def test_baseline_errors_are_one_line(ledger, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    session = make_session(ledger, plain)
    with pytest.raises(c.ConductError, match="not inside a git repository"):
        c.record_baseline(ledger, session, runs=2)
    with pytest.raises(c.BadInput, match="at least 2 runs"):
        c.record_baseline(ledger, session, runs=1)


def test_stopped_baseline_is_unjudged(ledger, repo):
    session = make_session(ledger, repo)
    stop = threading.Event()

    def progress(p: c.Progress) -> None:
        if p.runs_done == 3:
            stop.set()

    b = c.record_baseline(ledger, session, runs=10, stop=stop, progress=progress)
    assert (
        b.reproducibility is m.Reproducibility.UNJUDGED
        and "interrupted" in b.reproducibility_detail
    )
    assert len(ledger.list(m.Run, baseline_id=b.id)) == 3
    with pytest.raises(c.GateRefused, match=r"\(interrupted after 3 of 11 runs"):
        c.run_round(ledger, session)


# ------------------------------------------------------------------------------ variants


def test_variants_from_a_ref_and_from_a_patch(ledger, repo, tmp_path):
    session = make_session(ledger, repo)
    patch = patch_file(repo, tmp_path, "1.10\n", "slow")
    with pytest.raises(c.GateRefused, match="record a baseline first"):
        c.add_variant(ledger, session, "slow", patch=patch)
    c.record_baseline(ledger, session, runs=8, warmup=0)
    run_git(repo, "checkout", "-q", "-b", "other")
    (repo / "extra.txt").write_text("x\n")
    run_git(repo, "add", "extra.txt")
    run_git(repo, "commit", "-q", "-m", "extra")
    run_git(repo, "checkout", "-q", "main")

    by_ref = c.add_variant(ledger, session, "extra", ref="other", probe=True)
    assert by_ref.kind is m.VariantKind.PROBE and by_ref.files_changed == 1
    assert "extra.txt" in by_ref.diff_stat and by_ref.source == "ref other"
    by_patch = c.add_variant(ledger, session, "slow", patch=patch)
    assert by_patch.files_changed == 1 and "value.txt" in by_patch.diff_stat
    assert run_git(repo, "show", f"{by_patch.snapshot.commit}:value.txt") == "1.10\n"
    assert run_git(repo, "rev-parse", by_patch.snapshot.ref).strip() == by_patch.snapshot.commit
    assert {v.name for v in ledger.list(m.Variant, session_id=session.id)} == {"extra", "slow"}
    assert list_worktrees(repo) == [repo]

    with pytest.raises(c.BadInput, match="already has a variant named"):
        c.add_variant(ledger, session, "slow", patch=patch)
    with pytest.raises(c.BadInput, match="exactly one"):
        c.add_variant(ledger, session, "x", ref="other", patch=patch)
    with pytest.raises(c.BadInput, match="no hypothesis"):
        c.add_variant(ledger, session, "x", ref="other", hypothesis_id="nope")
    with pytest.raises(c.BadInput, match="names no commit"):
        c.add_variant(ledger, session, "x", ref="nope")
    stale = tmp_path / "stale.diff"
    stale.write_text(patch.read_text().replace("-1.00", "-3.00"))
    with pytest.raises(c.BadInput, match="does not apply"):
        c.add_variant(ledger, session, "again", patch=stale)
    assert list_worktrees(repo) == [repo]
    with pytest.raises(c.BadInput, match="variant name"):
        c.add_variant(ledger, session, "baseline", ref="other")
    hyp = m.Hypothesis(session_id=session.id, title="cache the value")
    ledger.put(hyp)
    v = c.add_variant(ledger, session, "linked", ref="other", hypothesis_id=hyp.id[:6])
    assert v.hypothesis_id == hyp.id


# ------------------------------------------------------------------------------ rounds


@pytest.mark.slow
def test_round_measures_interleaved_blocks_and_decides(ledger, repo, tmp_path):
    session = make_session(
        ledger,
        repo,
        check='test "$(cat value.txt)" != 9.99',
        hooks=m.Hooks(setup="true", prepare="true", cleanup="true"),
    )
    with pytest.raises(c.GateRefused, match="no baseline"):
        c.run_round(ledger, session)
    base = c.record_baseline(ledger, session, runs=8, warmup=0)
    slow = c.add_variant(ledger, session, "slow", patch=patch_file(repo, tmp_path, "1.10\n", "s"))
    same = c.add_variant(ledger, session, "same", ref="HEAD")
    bad = c.add_variant(ledger, session, "bad", patch=patch_file(repo, tmp_path, "9.99\n", "b"))
    seen: list[c.Progress] = []
    monitor = Scripted()
    rnd = c.run_round(
        ledger, session, min_blocks=6, max_blocks=9, seed=7, progress=seen.append, monitor=monitor
    )
    assert rnd.status is m.RoundStatus.COMPLETED and rnd.seed == 7
    assert 6 <= rnd.blocks <= 9 and rnd.summary["stop_reason"]
    comps = {(x.variant_id, x.workload): x for x in ledger.list(m.Comparison, round_id=rnd.id)}
    assert len(comps) == 3
    assert comps[(slow.id, "read")].verdict is m.Verdict.SLOWER
    assert comps[(slow.id, "read")].ratio == pytest.approx(1.1)
    assert comps[(same.id, "read")].verdict is m.Verdict.SAME
    assert comps[(bad.id, "read")].n == rnd.blocks
    assert rnd.baseline_check == pytest.approx(1.0) and rnd.baseline_reproduced is True
    assert rnd.summary["checks"] == {"slow": True, "same": True, "bad": False}
    checks = ledger.list(m.CorrectnessResult, session_id=session.id)
    assert sorted(x.passed for x in checks) == [False, True, True]
    runs = ledger.list(m.Run, round_id=rnd.id)
    assert len(runs) == 4 * (rnd.blocks + 1)  # 4 arms; one warm-up each
    assert sum(r.warmup for r in runs) == 4
    assert all(r.baseline_id == base.id and r.trust is m.Trust.CLEAN for r in runs)
    orders = {tuple(r.arm for r in runs if r.block == k) for k in range(1, rnd.blocks + 1)}
    assert len(orders) > 1  # a fresh random order per block
    assert len(monitor.started) == len(runs) and all(pid for _, pid in monitor.started)
    kinds = [h.kind for h in ledger.list(m.HookRecord, round_id=rnd.id)]
    assert kinds.count(m.HookKind.SETUP) == 4 and kinds.count(m.HookKind.CLEANUP) == 4
    assert kinds.count(m.HookKind.PREPARE) == len(runs)
    assert seen[-1].phase == "done"
    blocks_seen = [p for p in seen if p.phase == "round"]
    assert [p.block for p in blocks_seen] == list(range(1, rnd.blocks + 1))
    assert len(blocks_seen[-1].comparisons) == 3
    assert list_worktrees(repo) == [repo]

    again = c.run_round(ledger, session, variants=["slow"], min_blocks=6, max_blocks=6, seed=7)
    assert again.number == 2 and again.variant_ids == [slow.id]
    with pytest.raises(c.BadInput, match="no variant"):
        c.run_round(ledger, session, variants=["nope"])


def test_untrusted_run_is_quarantined_and_its_block_run_again(ledger, repo, tmp_path):
    session = make_session(ledger, repo)
    c.record_baseline(ledger, session, runs=8, warmup=0)
    c.add_variant(ledger, session, "same", ref="HEAD")
    # Runs finish in order: 2 warm-ups, then block 1 (runs 3, 4). Run 4 is untrusted, then
    # block 1 is run again (5, 6); block 2 fails 3 attempts (runs 7, 8, 9 untrusted).
    monitor = Scripted(untrusted={4, 7, 8, 9})
    rnd = c.run_round(ledger, session, min_blocks=3, max_blocks=4, seed=1, monitor=monitor)
    runs = ledger.list(m.Run, round_id=rnd.id)
    block1 = [r for r in runs if r.block == 1]
    assert [r.attempt for r in block1] == [0, 0, 1, 1]
    assert [r.status for r in block1[:2]] == [m.RunStatus.QUARANTINED] * 2
    assert block1[1].trust is m.Trust.UNTRUSTED and block1[1].telemetry == {"e_j": 1}
    assert "run again" in block1[0].trust_reasons[-1]
    assert [r.status for r in block1[2:]] == [m.RunStatus.OK] * 2
    assert [r.attempt for r in runs if r.block == 2] == [0, 1, 2]
    assert rnd.summary["skipped_blocks"] == [2]
    assert any("block 2" in n for n in rnd.summary["notes"])
    assert rnd.blocks == 3  # blocks 1, 3, 4
    comp = ledger.list(m.Comparison, round_id=rnd.id)[0]
    assert comp.n == 3 and comp.untrusted_runs >= 1


def test_stop_event_interrupts_and_keeps_completed_runs(ledger, repo):
    session = make_session(ledger, repo)
    c.record_baseline(ledger, session, runs=8, warmup=0)
    c.add_variant(ledger, session, "same", ref="HEAD")
    stop = threading.Event()

    def progress(p: c.Progress) -> None:
        if p.phase == "round" and p.block == 2:
            stop.set()

    rnd = c.run_round(ledger, session, min_blocks=10, max_blocks=20, stop=stop, progress=progress)
    assert rnd.status is m.RoundStatus.INTERRUPTED and rnd.blocks == 2
    assert rnd.summary["stop_reason"] == "interrupted"
    assert len(ledger.list(m.Run, round_id=rnd.id)) == 2 + 2 * 2
    assert ledger.list(m.Comparison, round_id=rnd.id)[0].n == 2
    assert list_worktrees(repo) == [repo]


def test_keyboard_interrupt_marks_the_round_and_removes_worktrees(ledger, repo):
    session = make_session(ledger, repo)
    c.record_baseline(ledger, session, runs=8, warmup=0)
    c.add_variant(ledger, session, "same", ref="HEAD")
    with pytest.raises(KeyboardInterrupt):
        c.run_round(ledger, session, monitor=Scripted(interrupt_at=5))
    rnd = ledger.list(m.Round, session_id=session.id)[0]
    assert rnd.status is m.RoundStatus.INTERRUPTED and rnd.ended_at is not None
    assert rnd.summary["stop_reason"] == "interrupted" and "error" not in rnd.summary
    assert len(ledger.list(m.Run, round_id=rnd.id)) == 4  # the 5th never got recorded
    assert list_worktrees(repo) == [repo]


def test_baseline_drift_makes_verdicts_untrusted(ledger, repo, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("1.0\n")
    session = make_session(
        ledger, repo, workloads=[m.Workload(name="read", command=f"cat {outside}")]
    )
    c.record_baseline(ledger, session, runs=8, warmup=0)
    c.add_variant(ledger, session, "same", ref="HEAD")
    outside.write_text("1.2\n")  # the machine changed since the baseline
    rnd = c.run_round(ledger, session, min_blocks=6, max_blocks=6, seed=3)
    assert rnd.baseline_check == pytest.approx(1.2) and rnd.baseline_reproduced is False
    (note,) = [n for n in rnd.summary["notes"] if "baseline not reproduced" in n]
    assert "in round 1" in note and "1.200× its reference" in note
    assert "do not use the reference" in note  # what it means for the paired verdicts
    assert f"record the baseline again (gpuopt baseline {session.id})" in note
    assert f"re-run the round (gpuopt round {session.id})" in note


def test_failed_setup_fails_the_round_cleanly(ledger, repo):
    session = make_session(ledger, repo)
    c.record_baseline(ledger, session, runs=8, warmup=0)
    c.add_variant(ledger, session, "same", ref="HEAD")
    session.contract.hooks.setup = "exit 4"
    with pytest.raises(c.ConductError, match="setup command failed in baseline"):
        c.run_round(ledger, session)
    rnd = ledger.list(m.Round, session_id=session.id)[0]
    assert rnd.status is m.RoundStatus.FAILED and "setup" in rnd.summary["error"]
    assert list_worktrees(repo) == [repo]


def test_a_session_on_a_subdirectory_runs_there(ledger, make_repo):
    repo = make_repo(files={"pkg/value.txt": "4.00\n", "value.txt": "9\n"})
    session = make_session(ledger, repo / "pkg")
    b = c.record_baseline(ledger, session, runs=8, warmup=0)
    assert b.reference == {"read": 4.0}
    c.add_variant(ledger, session, "same", ref="HEAD")
    rnd = c.run_round(ledger, session, min_blocks=6, max_blocks=6)
    assert rnd.baseline_check == pytest.approx(1.0)


def test_a_baselines_progress_carries_its_eta_from_the_pace_of_its_runs(ledger, repo) -> None:
    # The app made the baseline's ETA up from its own clock (a rule in tui/): the engine
    # gives it, so the CLI, the app and g's re-record all show one figure.
    session = make_session(ledger, repo)
    seen: list[c.Progress] = []
    c.record_baseline(ledger, session, runs=6, warmup=1, progress=seen.append)
    runs = [p for p in seen if p.phase == "baseline" and p.runs_total]
    assert runs, seen
    assert all(p.eta_s is not None and p.eta_s >= 0 for p in runs), runs
    ends = [p for p in runs if p.runs_done == p.runs_total]  # "run 6 of 6": none left
    assert ends and all(p.eta_s == 0 for p in ends), runs
    assert runs[0].eta_s is not None and runs[0].eta_s > 0  # runs left, at a pace over 0 s
