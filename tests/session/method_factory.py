"""Rows of a session built directly (as the engine and the harness would write them), with
fixed ids and timestamps, for the method's tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ledger import Ledger
from session import models as m

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
COMMIT_B = "a" * 40
COMMIT_V = "b" * 40
COMMIT_W = "c" * 40


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def open_ledger(tmp_path: Path) -> Ledger:
    return Ledger.open(tmp_path / "ledger.db")


def make_session(
    ledger: Ledger,
    *,
    scopes: tuple[m.WorkloadScope, ...] = (m.WorkloadScope.END_TO_END,),
    training: bool = False,
    sid: str = "5e5510000001",
    check: str | None = "python -m pytest -q tests/test_softmax.py",
) -> m.Session:
    workloads = [
        m.Workload(
            name=f"w{i}" if len(scopes) > 1 else "e2e",
            command=f"python bench.py --case {i}",
            scope=scope,
            training=training,
        )
        for i, scope in enumerate(scopes)
    ]
    session = m.Session(
        id=sid,
        title="softmax fusion",
        repo="/home/me/proj",
        contract=m.Contract(
            workloads=workloads, check=check, hooks=m.Hooks(prepare="rm -rf .cache")
        ),
        created_at=T0,
    )
    ledger.put(session)
    return session


def snapshot(commit: str, sid: str, minutes: int = 0) -> m.Snapshot:
    return m.Snapshot(
        id=f"snap{commit[:8]}",
        commit=commit,
        ref=f"refs/gpuopt/snapshots/snap{commit[:8]}",
        head=commit,
        created_at=at(minutes),
    )


def make_baseline(
    ledger: Ledger,
    session: m.Session,
    reproducibility: m.Reproducibility = m.Reproducibility.REPRODUCIBLE,
    bid: str = "ba5e11000001",
) -> m.Baseline:
    b = m.Baseline(
        id=bid,
        session_id=session.id,
        snapshot=snapshot(COMMIT_B, session.id, 1),
        environment=m.EnvironmentFingerprint(
            gpus=[m.GpuInfo(name="NVIDIA H200", driver="570.1", max_sm_clock_mhz=1980)],
            python="3.11.9",
            os="Linux",
            cpu_model="Xeon",
            cpu_count=16,
            hostname="box",
        ),
        contract_hash=session.contract.stable_hash(),
        reference={w.name: 1.25 for w in session.contract.workloads},
        reproducibility=reproducibility,
        reproducibility_detail="split-half ratio 1.004 [0.991, 1.017]",
        reset_procedure="worktree at the snapshot; prepare: rm -rf .cache",
        created_at=at(2),
    )
    ledger.put(b)
    return b


def make_variant(
    ledger: Ledger,
    session: m.Session,
    name: str = "fused",
    hypothesis_id: str | None = None,
    vid: str = "7a1a00000001",
    commit: str = COMMIT_V,
    kind: m.VariantKind = m.VariantKind.CHANGE,
) -> m.Variant:
    v = m.Variant(
        id=vid,
        session_id=session.id,
        name=name,
        hypothesis_id=hypothesis_id,
        snapshot=snapshot(commit, session.id, 5),
        kind=kind,
        source="feature/fused",
        diff_stat="1 file changed, 12 insertions(+), 30 deletions(-)",
        files_changed=1,
        created_at=at(5),
    )
    ledger.put(v)
    return v


def make_round(
    ledger: Ledger,
    session: m.Session,
    baseline: m.Baseline,
    variants: list[m.Variant],
    *,
    rid: str = "40d000000001",
    number: int = 1,
    reproduced: bool = True,
) -> m.Round:
    r = m.Round(
        id=rid,
        session_id=session.id,
        baseline_id=baseline.id,
        number=number,
        variant_ids=[v.id for v in variants],
        seed=1234,
        status=m.RoundStatus.COMPLETED,
        blocks=12,
        baseline_check=1.003,
        baseline_reproduced=reproduced,
        started_at=at(10 + number),
        ended_at=at(20 + number),
    )
    ledger.put(r)
    return r


def make_comparison(
    ledger: Ledger,
    rnd: m.Round,
    variant: m.Variant,
    workload: str = "e2e",
    verdict: m.Verdict = m.Verdict.FASTER,
    untrusted: int = 0,
    cid: str | None = None,
) -> m.Comparison:
    ratio = {m.Verdict.FASTER: 0.742, m.Verdict.SLOWER: 1.2, m.Verdict.SAME: 1.004}.get(
        verdict, 0.99
    )
    c = m.Comparison(
        id=cid or f"c0{variant.id[:5]}{workload[:3]}{rnd.number}".ljust(12, "0")[:12],
        round_id=rnd.id,
        variant_id=variant.id,
        workload=workload,
        n=12,
        ratio=ratio,
        ci_low=ratio - 0.011,
        ci_high=ratio + 0.013,
        verdict=verdict,
        blocks_needed=8 if verdict is m.Verdict.INCONCLUSIVE else None,
        untrusted_runs=untrusted,
    )
    ledger.put(c)
    return c


def make_runs(ledger: Ledger, rnd: m.Round, variant: m.Variant, workload: str = "e2e") -> None:
    runs = []
    for block in range(3):
        for arm in ("baseline", variant.id):
            runs.append(
                m.Run(
                    id=f"r{block}{arm[:4]}{workload[:3]}{rnd.number}".ljust(12, "0")[:12],
                    session_id=rnd.session_id,
                    round_id=rnd.id,
                    arm=arm,
                    workload=workload,
                    block=block,
                    value=1.0,
                    trust=m.Trust.CLEAN if block else m.Trust.WARN,
                    started_us=block * 10,
                    ended_us=block * 10 + 5,
                )
            )
    ledger.put(*runs)


def make_correctness(
    ledger: Ledger,
    session: m.Session,
    variant: m.Variant,
    *,
    workload: str = "e2e",
    passed: bool = True,
    stats: list[m.ErrorStats] | None = None,
    suggested: m.OptimizationClass | None = None,
    cid: str | None = None,
    minutes: int = 25,
) -> m.CorrectnessResult:
    c = m.CorrectnessResult(
        id=cid or f"cc{variant.id[:5]}{workload[:4]}".ljust(12, "0")[:12],
        session_id=session.id,
        variant_id=variant.id,
        workload=workload,
        passed=passed,
        trials=5,
        seeds=[0, 1, 2, 3, 4],
        stats=stats or [],
        suggested_class=suggested,
        exit_code=0 if passed else 1,
        created_at=at(minutes),
    )
    ledger.put(c)
    return c


def error_stats(output: str = "out", bit_identical: bool = False) -> m.ErrorStats:
    return m.ErrorStats(
        output=output,
        ref_shape=[64, 128],
        new_shape=[64, 128],
        ref_dtype="float32",
        new_dtype="float32",
        max_abs=0.0 if bit_identical else 2.4e-7,
        mean_abs=0.0 if bit_identical else 3.1e-8,
        max_rel=0.0 if bit_identical else 1.9e-6,
        ulp_max=0 if bit_identical else 4,
        ulp_p50=0,
        ulp_p99=0 if bit_identical else 2,
        atol=1e-5,
        rtol=1.3e-6,
        worst_index=[3, 17],
        bit_identical=bit_identical,
    )


def make_audit(
    ledger: Ledger,
    session: m.Session,
    arm: str,
    *,
    launches: int,
    peak: int,
    workload: str = "e2e",
    ops: int | None = None,
    allocs: int | None = None,
) -> m.Audit:
    a = m.Audit(
        id=f"au{arm[:6]}{workload[:4]}".ljust(12, "0")[:12],
        session_id=session.id,
        arm=arm,
        workload=workload,
        device="cuda",
        dtype="float32",
        kernel_launches=launches,
        operator_count=ops if ops is not None else launches,
        allocation_count=allocs if allocs is not None else 4,
        peak_bytes=peak,
        created_at=at(24),
    )
    ledger.put(a)
    return a


def measured_variant(
    ledger: Ledger, session: m.Session, **kw: Any
) -> tuple[m.Baseline, m.Variant, m.Round]:
    """A reproducible baseline, one variant, one round with a FASTER comparison per workload,
    and a passing correctness result with error statistics per workload."""
    b = make_baseline(ledger, session)
    v = make_variant(ledger, session, **kw)
    r = make_round(ledger, session, b, [v])
    for w in session.contract.workloads:
        make_comparison(ledger, r, v, workload=w.name)
        make_correctness(ledger, session, v, workload=w.name, stats=[error_stats()])
    return b, v, r
