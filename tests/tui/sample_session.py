"""A fixed sample session written straight into a ledger: frozen ids, times and numbers.

It is what the snapshot tests show (scripts/screenshots.py pictures a real demo ledger
instead), so they never depend on a clock, a random id or a machine's speed. The numbers
are plausible for the demo repository.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from session import models as m

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SID = "5e551011a7c1"
BID = "b45e11e7c1e0"
RID = "r0und1000001"
COMMIT = "3f2a9c1d" * 5


def _t(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def contract() -> m.Contract:
    return m.Contract(
        metric=m.Metric(
            name="softmax time", source=m.MetricSource.JSON, pattern="gpuopt_value", unit="ms"
        ),
        workloads=[
            m.Workload(name="softmax", command="python bench.py", scope=m.WorkloadScope.ISOLATED)
        ],
        check="python check.py",
        threshold=0.02,
    )


def build_sample(
    ledger: Any, upto: m.StepName = m.StepName.RECORD, repo: str = "/home/you/gpuopt-demo"
) -> m.Session:
    order = list(m.StepName)
    stop = order.index(upto)

    def reach(step: m.StepName) -> bool:
        return order.index(step) <= stop

    s = m.Session(
        id=SID,
        title="Softmax: fewer passes over the logits",
        repo=repo,
        contract=contract(),
        created_at=T0,
    )
    items: list[Any] = [s]
    # an older session whose rejected idea the new one should be reminded of
    old = m.Session(
        id="01d5e5510000",
        title="Softmax in fp16",
        repo=repo,
        contract=contract(),
        created_at=T0 - timedelta(days=9),
    )
    items.append(old)
    items.append(
        m.Hypothesis(
            id="0ldf16000001",
            session_id=old.id,
            title="Skip the max subtraction to save a pass",
            mechanism="one fewer reduction over the row; exp overflows for large logits",
            status=m.HypothesisStatus.REJECTED,
            reopen_when="never for unbounded logits",
            created_at=old.created_at,
        )
    )
    snap = m.Snapshot(
        id="5nap00000001",
        commit=COMMIT,
        ref=f"refs/gpuopt/snapshots/{'5nap00000001'}",
        head=COMMIT,
        created_at=_t(2),
    )
    if reach(m.StepName.BASELINE):
        env = m.EnvironmentFingerprint(
            gpus=[
                m.GpuInfo(
                    name="NVIDIA H200", uuid="GPU-0000", driver="570.86", max_sm_clock_mhz=1980
                )
            ],
            torch="2.13.0",
            cuda_runtime="12.8",
            python="3.12.3",
            os="Linux",
            hostname="gpu-box-7",
            cpu_model="AMD EPYC 9654",
            cpu_count=16,
        )
        items.append(
            m.Baseline(
                id=BID,
                session_id=SID,
                snapshot=snap,
                environment=env,
                contract_hash=contract().stable_hash(),
                runs_per_workload=10,
                reference={"softmax": 4.112},
                reproducibility=m.Reproducibility.REPRODUCIBLE,
                reproducibility_detail="halves agree: 1.004 [0.991, 1.017]",
                created_at=_t(4),
            )
        )
        for i in range(10):
            items.append(
                m.Run(
                    id=f"bru{i:09d}",
                    session_id=SID,
                    baseline_id=BID,
                    arm="baseline",
                    workload="softmax",
                    block=i,
                    value=4.1 + (i % 3) * 0.01,
                    trust=m.Trust.CLEAN,
                    started_us=i,
                    ended_us=i + 1,
                )
            )
    if reach(m.StepName.PREFLIGHT):
        for q, kind, text, area in (
            (
                m.PreflightQuestion.LIFETIME,
                m.PreflightAnswerKind.MEASURED,
                "input and output live for the whole call",
                None,
            ),
            (
                m.PreflightQuestion.BACKING,
                m.PreflightAnswerKind.MEASURED,
                "device memory from the caching allocator",
                None,
            ),
            (
                m.PreflightQuestion.RESIDENCY,
                m.PreflightAnswerKind.HANDED_OFF,
                "",
                m.ConcernArea.KERNEL_EXECUTION,
            ),
            (
                m.PreflightQuestion.IDENTITY,
                m.PreflightAnswerKind.NOT_APPLICABLE,
                "output is a fresh tensor",
                None,
            ),
        ):
            items.append(
                m.PreflightAnswer(
                    session_id=SID,
                    question=q,
                    kind=kind,
                    text=text,
                    concern_area=area,
                    updated_at=_t(6),
                )
            )
    hyps = [
        m.Hypothesis(
            id="h1fused00001",
            session_id=SID,
            title="One fused softmax instead of four passes",
            symptom="four elementwise and reduction passes per row",
            mechanism="each pass re-reads the row from memory",
            predicted_effect="25-40% less time",
            predicted_direction=m.Direction.LOWER,
            predicted_evidence="fewer aten ops per call",
            falsifier="ops drop but time does not",
            confidence=m.Confidence.HIGH,
            created_at=_t(8),
        ),
        m.Hypothesis(
            id="h2nomax00001",
            session_id=SID,
            title="Drop the max subtraction",
            mechanism="saves the max reduction pass",
            predicted_effect="10% less time",
            predicted_direction=m.Direction.LOWER,
            falsifier="NaN on large logits",
            confidence=m.Confidence.LOW,
            created_at=_t(9),
        ),
        m.Hypothesis(
            id="h3noop000001",
            session_id=SID,
            title="Contiguous copy first (control)",
            mechanism="the input is already contiguous: nothing should change",
            predicted_effect="no change",
            confidence=m.Confidence.MEDIUM,
            created_at=_t(10),
        ),
    ]
    if reach(m.StepName.HYPOTHESES):
        items.extend(hyps)
    variants = [
        m.Variant(
            id="v1fused00001",
            session_id=SID,
            name="fused",
            hypothesis_id=hyps[0].id,
            snapshot=snap.model_copy(update={"id": "5nap00000002", "commit": "a1" * 20}),
            source="fused",
            diff_stat="bench.py | 6 ++----",
            files_changed=1,
            created_at=_t(12),
        ),
        m.Variant(
            id="v2nomax00001",
            session_id=SID,
            name="no-max",
            hypothesis_id=hyps[1].id,
            snapshot=snap.model_copy(update={"id": "5nap00000003", "commit": "b2" * 20}),
            source="no-max",
            files_changed=1,
            created_at=_t(13),
        ),
        m.Variant(
            id="v3noop000001",
            session_id=SID,
            name="same",
            hypothesis_id=hyps[2].id,
            snapshot=snap.model_copy(update={"id": "5nap00000004", "commit": "c3" * 20}),
            source="no-op",
            files_changed=1,
            created_at=_t(14),
        ),
    ]
    if reach(m.StepName.ROUND):
        items.extend(variants)
    if reach(m.StepName.RESULTS):
        items.append(
            m.Round(
                id=RID,
                session_id=SID,
                baseline_id=BID,
                number=1,
                variant_ids=[v.id for v in variants],
                seed=7,
                status=m.RoundStatus.COMPLETED,
                blocks=14,
                baseline_check=1.003,
                baseline_reproduced=True,
                started_at=_t(15),
                ended_at=_t(17),
            )
        )
        items += [
            m.Comparison(
                id="c1",
                round_id=RID,
                variant_id=variants[0].id,
                workload="softmax",
                n=14,
                ratio=0.742,
                ci_low=0.731,
                ci_high=0.755,
                verdict=m.Verdict.FASTER,
            ),
            m.Comparison(
                id="c2",
                round_id=RID,
                variant_id=variants[1].id,
                workload="softmax",
                n=14,
                ratio=0.912,
                ci_low=0.897,
                ci_high=0.930,
                verdict=m.Verdict.FASTER,
            ),
            m.Comparison(
                id="c3",
                round_id=RID,
                variant_id=variants[2].id,
                workload="softmax",
                n=14,
                ratio=1.004,
                ci_low=0.991,
                ci_high=1.018,
                verdict=m.Verdict.SAME,
            ),
        ]
        items += [
            m.CorrectnessResult(
                id="k1",
                session_id=SID,
                variant_id=variants[0].id,
                workload="softmax",
                passed=True,
                seeds=[0],
                suggested_class=m.OptimizationClass.C2,
                created_at=_t(17),
                stats=[
                    m.ErrorStats(
                        max_abs=5.96e-8,
                        mean_abs=1.2e-9,
                        max_rel=3.1e-7,
                        ulp_max=2,
                        ulp_p50=0,
                        ulp_p99=1,
                    )
                ],
            ),
            m.CorrectnessResult(
                id="k2",
                session_id=SID,
                variant_id=variants[1].id,
                workload="softmax",
                passed=False,
                seeds=[0],
                created_at=_t(17),
                stats=[
                    m.ErrorStats(
                        max_abs=None,
                        mismatches=4096,
                        mismatch_share=0.0625,
                        nan_new=4096,
                        nonfinite_positions_match=False,
                        worst_index=[3, 0],
                    )
                ],
            ),
            m.CorrectnessResult(
                id="k3",
                session_id=SID,
                variant_id=variants[2].id,
                workload="softmax",
                passed=True,
                exact=True,
                seeds=[0],
                suggested_class=m.OptimizationClass.C1,
                created_at=_t(17),
                stats=[m.ErrorStats(bit_identical=True)],
            ),
            m.Audit(
                id="a0",
                session_id=SID,
                arm="baseline",
                workload="softmax",
                operator_count=5,
                allocation_count=4,
                peak_bytes=48 * 2**20,
                created_at=_t(16),
            ),
            m.Audit(
                id="a1",
                session_id=SID,
                arm=variants[0].id,
                workload="softmax",
                operator_count=1,
                allocation_count=1,
                peak_bytes=16 * 2**20,
                created_at=_t(16),
            ),
            m.Audit(
                id="a2",
                session_id=SID,
                arm=variants[1].id,
                workload="softmax",
                operator_count=3,
                allocation_count=3,
                peak_bytes=32 * 2**20,
                created_at=_t(16),
            ),
            m.Audit(
                id="a3",
                session_id=SID,
                arm=variants[2].id,
                workload="softmax",
                operator_count=6,
                allocation_count=5,
                peak_bytes=64 * 2**20,
                created_at=_t(16),
            ),
        ]
    if reach(m.StepName.DISPOSITION):
        items.append(
            m.Residual(
                id="res1",
                session_id=SID,
                variant_id=variants[0].id,
                hypothesis_id=hyps[0].id,
                round_id=RID,
                suggested=m.ResidualClass.AS_PREDICTED,
                confirmed=m.ResidualClass.AS_PREDICTED,
                created_at=_t(18),
            )
        )
    if reach(m.StepName.RECORD):
        items += [
            m.Disposition(
                id="d1",
                session_id=SID,
                variant_id=variants[0].id,
                choice=m.DispositionChoice.KEEP_DEFAULT,
                optimization_class=m.OptimizationClass.C2,
                fallback="git revert",
                reason="26% faster, same precision, within 2 ulp",
                created_at=_t(19),
            ),
            m.Disposition(
                id="d2",
                session_id=SID,
                variant_id=variants[1].id,
                choice=m.DispositionChoice.REJECT,
                reason="NaN for logits above 88",
                reopen_when="inputs are known to be bounded",
                created_at=_t(20),
            ),
        ]
    with ledger.write():
        ledger.put(*items)
    return s
