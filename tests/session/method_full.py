"""One full session, every part of the decision record filled, from a dict of texts.

The golden test fills it with readable words; the property test with arbitrary unicode.
Ids and timestamps are fixed, so the export is the same every time.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from method_factory import COMMIT_B, COMMIT_V, COMMIT_W, at

from ledger import Ledger
from session import models as m
from session import preflight as pf
from session.dispositions import dispose
from session.evidence import parse_ncu_csv, parse_torch_table
from session.residuals import set_round_summary

DATA = Path(__file__).parent / "data"

TEXT_KEYS = (
    "title",
    "repo",
    "metric_name",
    "unit",
    "workload_a",
    "workload_b",
    "command_a",
    "command_b",
    "env_value",
    "check",
    "prepare",
    "setup",
    "launcher",
    "gpu_name",
    "hostname",
    "reset",
    "repro_detail",
    "snapshot_warning",
    "h_title",
    "symptom",
    "mechanism",
    "preconditions",
    "predicted_effect",
    "predicted_evidence",
    "falsifier",
    "confounders",
    "cost",
    "confidence_update",
    "reopen_when",
    "why",
    "h2_title",
    "variant_name",
    "probe_name",
    "variant_source",
    "diff_stat",
    "answer",
    "not_applicable",
    "checklist_note",
    "bottleneck_evidence",
    "note",
    "evidence_title",
    "output_name",
    "dtype",
    "summary_next",
    "residual_note",
    "guard",
    "fallback",
    "failure_case",
    "remaining",
    "reason",
)

READABLE: dict[str, str] = {
    "title": "softmax fusion",
    "repo": "/home/me/proj",
    "metric_name": "step time",
    "unit": "ms",
    "workload_a": "kernel",
    "workload_b": "train-step",
    "command_a": "python bench.py --only softmax",
    "command_b": "python train.py --steps 20 | tail -1",
    "env_value": "1",
    "check": "pytest -q tests/test_softmax.py",
    "prepare": "rm -rf ~/.cache/torchinductor",
    "setup": "nvidia-smi -q -d CLOCK > /dev/null",
    "launcher": "srun -N1 --gpus=1",
    "gpu_name": "NVIDIA H200",
    "hostname": "gpu-box-7",
    "reset": "worktree at the snapshot; prepare: rm -rf ~/.cache/torchinductor",
    "repro_detail": "split-half ratio 1.004 [0.991, 1.017]",
    "snapshot_warning": "submodule third_party/cutlass has uncommitted changes",
    "h_title": "softmax logits make a round trip through memory",
    "symptom": "softmax is 18% of the step; its input is written then read back",
    "mechanism": "the matmul writes logits to HBM and softmax reads them again",
    "preconditions": "rows fit in shared memory (<= 4096 columns)",
    "predicted_effect": "step time falls 10-15% on train-step, 40% on kernel",
    "predicted_evidence": "fewer kernel launches, lower peak memory",
    "falsifier": "count launches with the fused variant",
    "confounders": "clock boost; controlled by interleaving and telemetry",
    "cost": "one day; medium risk (numerics)",
    "confidence_update": "launch count unchanged would lower it",
    "reopen_when": "row length above 4096 becomes common",
    "why": "the launch count fell from 7 to 1",
    "h2_title": "bigger tiles raise occupancy",
    "variant_name": "fused",
    "probe_name": "skip-softmax",
    "variant_source": "feature/fused-softmax",
    "diff_stat": "2 files changed, 40 insertions(+), 12 deletions(-)",
    "answer": "peak 2.1 GiB measured at step 3",
    "not_applicable": "no state survives a call",
    "checklist_note": "1.25 s, 57 launches, 2.1 GiB peak",
    "bottleneck_evidence": "dram throughput 88% of peak in the softmax kernel",
    "note": "nsys shows a 40 us gap before softmax",
    "evidence_title": "ncu of the baseline step",
    "output_name": "out",
    "dtype": "float32",
    "summary_next": "re-profile the step with ncu after fusion lands",
    "residual_note": "launches 7 -> 1 and 26% faster, as predicted",
    "guard": "last dimension <= 4096",
    "fallback": "the unfused softmax path",
    "failure_case": "rows longer than 4096 fall back (no gain)",
    "remaining": "the attention matmul (61% of step time)",
    "reason": "faster on both workloads, error within tolerance",
}


def _nz(text: str, fallback: str) -> str:
    """The text, or a fallback where a model refuses blank text."""
    return text if text.strip() else fallback


def _workload_name(text: str, fallback: str) -> str:
    name = re.sub(r"[=,\s]", "", text)
    return name or fallback


def _variant_name(text: str, fallback: str) -> str:
    name = re.sub(r"[,\s]", "", text)
    return fallback if not name or name == "baseline" else name


def build_full_session(ledger: Ledger, t: dict[str, str]) -> m.Session:
    wa = _workload_name(t["workload_a"], "wa")
    wb = _workload_name(t["workload_b"], "wb")
    if wb == wa:
        wb = wa + "-2"
    contract = m.Contract(
        metric=m.Metric(name=t["metric_name"] or "time", unit=t["unit"]),
        workloads=[
            m.Workload(
                name=wa,
                command=_nz(t["command_a"], "true"),
                scope=m.WorkloadScope.ISOLATED,
                env={"CUDA_LAUNCH_BLOCKING": t["env_value"]},
            ),
            m.Workload(name=wb, command=_nz(t["command_b"], "true"), training=True),
        ],
        check=t["check"] or None,
        hooks=m.Hooks(setup=t["setup"] or None, prepare=t["prepare"] or None),
        launcher=t["launcher"] or None,
    )
    s = m.Session(
        id="5e5510000001",
        title=t["title"] if t["title"].strip() else "untitled",
        repo=t["repo"] if t["repo"].strip() else "/repo",
        contract=contract,
        created_at=at(0),
    )
    ledger.put(s)

    snap = m.Snapshot(
        id="snap00000001",
        commit=COMMIT_B,
        ref="refs/gpuopt/snapshots/snap00000001",
        head=COMMIT_B,
        dirty=True,
        warnings=[t["snapshot_warning"]],
        created_at=at(1),
    )
    b = m.Baseline(
        id="ba5e11000001",
        session_id=s.id,
        snapshot=snap,
        environment=m.EnvironmentFingerprint(
            gpus=[
                m.GpuInfo(
                    name=t["gpu_name"], driver="570.86", max_sm_clock_mhz=1980, mig_mode=False
                )
            ],
            cuda_runtime="12.8",
            torch="2.7.0",
            torch_cuda="12.8",
            python="3.11.9",
            os="Linux",
            kernel="6.8.0",
            cpu_model="Xeon 8480",
            cpu_count=16,
            hostname=t["hostname"],
            variables={"CUDA_VISIBLE_DEVICES": "0"},
        ),
        contract_hash=contract.stable_hash(),
        reference={wa: 0.000412, wb: 1.25},
        reproducibility=m.Reproducibility.REPRODUCIBLE,
        reproducibility_detail=t["repro_detail"],
        reset_procedure=t["reset"],
        created_at=at(2),
    )
    ledger.put(b)

    # preflight
    ev_note = m.Evidence(
        id="e00000000001",
        session_id=s.id,
        kind=m.EvidenceKind.NOTE,
        title=t["note"][:60],
        text=t["note"],
        created_at=at(3),
    )
    ledger.put(ev_note)
    answers = [
        m.PreflightAnswer(
            session_id=s.id,
            question=m.PreflightQuestion.LIFETIME,
            kind=m.PreflightAnswerKind.MEASURED,
            text=t["answer"],
            evidence_id=ev_note.id,
            updated_at=at(3),
        ),
        m.PreflightAnswer(
            session_id=s.id,
            question=m.PreflightQuestion.RESIDENCY,
            kind=m.PreflightAnswerKind.HANDED_OFF,
            text=t["answer"],
            concern_area=m.ConcernArea.TIERING_AND_MIGRATION,
            updated_at=at(3),
        ),
        m.PreflightAnswer(
            session_id=s.id,
            question=m.PreflightQuestion.MUTATION,
            kind=m.PreflightAnswerKind.NOT_APPLICABLE,
            text=t["not_applicable"] if t["not_applicable"].strip() else "n/a",
            updated_at=at(3),
        ),
        m.PreflightAnswer(
            session_id=s.id,
            question=m.PreflightQuestion.SCHEDULE,
            kind=m.PreflightAnswerKind.UNKNOWN,
            text=t["answer"],
            updated_at=at(3),
        ),
    ]
    ledger.put(*answers)
    pf.set_checklist(ledger, s, 1, True, t["checklist_note"])
    pf.set_checklist(ledger, s, 3, True, t["checklist_note"])
    pf.set_checklist(ledger, s, 11, False, t["checklist_note"])
    bn = t["bottleneck_evidence"]
    pf.set_bottleneck(ledger, s, "bandwidth-bound", bn if bn.strip() else "dram 88%")

    # hypotheses with history
    h = m.Hypothesis(
        id="4f0000000001",
        session_id=s.id,
        title=t["h_title"] if t["h_title"].strip() else "h",
        symptom=t["symptom"],
        mechanism=t["mechanism"],
        preconditions=t["preconditions"],
        predicted_effect=t["predicted_effect"],
        predicted_direction=m.Direction.LOWER,
        predicted_evidence=t["predicted_evidence"],
        falsifier=t["falsifier"],
        confounders=t["confounders"],
        cost=t["cost"],
        confidence=m.Confidence.HIGH,
        confidence_update=t["confidence_update"],
        status=m.HypothesisStatus.SUPPORTED,
        reopen_when=t["reopen_when"],
        concern_areas=[
            m.ConcernArea.NUMERICAL_SAFETY,
            m.ConcernArea.FUSION_AND_LAYOUT,
            m.ConcernArea.TRAINING_PATH,
        ],
        created_at=at(4),
    )
    h2 = m.Hypothesis(
        id="4f0000000002",
        session_id=s.id,
        title=t["h2_title"] if t["h2_title"].strip() else "h2",
        status=m.HypothesisStatus.REJECTED,
        confidence=m.Confidence.LOW,
        reopen_when=t["reopen_when"] or "never",
        created_at=at(5),
    )
    events = [
        m.HypothesisEvent(
            id="ee0000000001",
            hypothesis_id=h.id,
            field="created",
            to_value="proposed",
            why=t["why"],
            at=at(4),
        ),
        m.HypothesisEvent(
            id="ee0000000002",
            hypothesis_id=h.id,
            field="confidence",
            from_value="medium",
            to_value="high",
            why=t["why"],
            at=at(30),
        ),
        m.HypothesisEvent(
            id="ee0000000003",
            hypothesis_id=h.id,
            field="status",
            from_value="proposed",
            to_value="supported",
            why=t["why"],
            at=at(30),
        ),
        m.HypothesisEvent(
            id="ee0000000004",
            hypothesis_id=h2.id,
            field="status",
            from_value="proposed",
            to_value="rejected",
            why=t["why"],
            at=at(31),
        ),
    ]
    ledger.put(h, h2, *events)

    # variants, evidence from profiles
    vname = _variant_name(t["variant_name"], "fused")
    pname = _variant_name(t["probe_name"], "probe")
    if pname == vname:
        pname = vname + "-probe"
    v = m.Variant(
        id="7a1a00000001",
        session_id=s.id,
        name=vname,
        hypothesis_id=h.id,
        snapshot=m.Snapshot(
            id="snap00000002",
            commit=COMMIT_V,
            ref="refs/gpuopt/snapshots/snap00000002",
            created_at=at(6),
        ),
        source=t["variant_source"],
        diff_stat=t["diff_stat"],
        files_changed=2,
        created_at=at(6),
    )
    p = m.Variant(
        id="7a1a00000002",
        session_id=s.id,
        name=pname,
        hypothesis_id=h.id,
        kind=m.VariantKind.PROBE,
        snapshot=m.Snapshot(
            id="snap00000003",
            commit=COMMIT_W,
            ref="refs/gpuopt/snapshots/snap00000003",
            created_at=at(7),
        ),
        source="probe.patch",
        created_at=at(7),
    )
    ledger.put(v, p)
    ncu = parse_ncu_csv((DATA / "ncu_raw_sample.csv").read_text())
    torch_summary = parse_torch_table((DATA / "torch_table_cuda.txt").read_text())
    ledger.put(
        m.Evidence(
            id="e00000000002",
            session_id=s.id,
            hypothesis_id=h.id,
            kind=m.EvidenceKind.NCU_CSV,
            title=t["evidence_title"],
            path="/data/profiles/base.ncu.csv",
            summary={**ncu, "file": {"bytes": 2048, "sha256": "ab" * 32}},
            created_at=at(8),
        ),
        m.Evidence(
            id="e00000000003",
            session_id=s.id,
            variant_id=v.id,
            kind=m.EvidenceKind.TORCH_PROFILE,
            title=t["evidence_title"],
            path="/data/profiles/fused.txt",
            summary={**torch_summary, "file": {"bytes": 1024, "sha256": "cd" * 32}},
            created_at=at(9),
        ),
    )

    # one round, with comparisons, runs, audits and correctness
    r = m.Round(
        id="40d000000001",
        session_id=s.id,
        baseline_id=b.id,
        number=1,
        variant_ids=[v.id, p.id],
        seed=1234,
        status=m.RoundStatus.COMPLETED,
        blocks=14,
        baseline_check=1.003,
        baseline_reproduced=True,
        started_at=at(10),
        ended_at=at(20),
        summary={  # what the engine writes beside the person's search-round fields
            "seed": 1234,
            "stop_reason": "every variant decided",
            "elapsed_s": 812.4,
            "skipped_blocks": [],
            "notes": [f"block 3 re-run: {t['why']}"],
            "baseline_check": {wa: 1.003, wb: 0.998},
        },
    )
    ledger.put(r)
    comps = []
    for i, (var, wl, verdict, ratio) in enumerate(
        [
            (v, wa, m.Verdict.FASTER, 0.598),
            (v, wb, m.Verdict.FASTER, 0.871),
            (p, wa, m.Verdict.FASTER, 0.412),
            (p, wb, m.Verdict.INCONCLUSIVE, 0.97),
        ]
    ):
        comps.append(
            m.Comparison(
                id=f"c0000000000{i}",
                round_id=r.id,
                variant_id=var.id,
                workload=wl,
                n=14,
                ratio=ratio,
                ci_low=ratio - 0.012,
                ci_high=ratio + 0.015,
                verdict=verdict,
                blocks_needed=9 if verdict is m.Verdict.INCONCLUSIVE else None,
            )
        )
    ledger.put(*comps)
    runs = [
        m.Run(
            id=f"run{blk:02d}{arm[:3]}{w[:2]}".ljust(12, "0")[:12] + "",
            session_id=s.id,
            round_id=r.id,
            arm=arm,
            workload=w,
            block=blk,
            value=1.0,
            trust=m.Trust.WARN if blk == 0 else m.Trust.CLEAN,
            started_us=blk,
            ended_us=blk + 1,
        )
        for blk in range(2)
        for arm in ("baseline", v.id)
        for w in (wa, wb)
    ]
    for i, run in enumerate(runs):
        run.id = f"run{i:09d}"
    ledger.put(*runs)
    ledger.put(
        m.Audit(
            id="a00000000001",
            session_id=s.id,
            arm="baseline",
            workload=wa,
            device="cuda",
            dtype=t["dtype"],
            kernel_launches=7,
            operator_count=9,
            allocation_count=5,
            peak_bytes=2 << 30,
            created_at=at(21),
        ),
        m.Audit(
            id="a00000000002",
            session_id=s.id,
            arm=v.id,
            workload=wa,
            device="cuda",
            dtype=t["dtype"],
            kernel_launches=1,
            operator_count=3,
            allocation_count=3,
            peak_bytes=(2 << 30) - (48 << 20),
            created_at=at(21),
        ),
    )
    out = t["output_name"] or "out"
    stats = [
        m.ErrorStats(
            output=out,
            ref_shape=[64, 4096],
            new_shape=[64, 4096],
            ref_dtype="float32",
            new_dtype="float32",
            max_abs=2.4e-7,
            mean_abs=3.1e-8,
            max_rel=1.9e-6,
            ulp_max=4,
            ulp_p50=0,
            ulp_p99=2,
            mismatches=0,
            mismatch_share=0.0,
            atol=1e-5,
            rtol=1.3e-6,
            worst_index=[3, 17],
        ),
        m.ErrorStats(
            output=f"grad:{out}",
            max_abs=1.1e-6,
            mean_abs=2e-7,
            max_rel=4e-6,
            ulp_max=9,
            ulp_p50=1,
            ulp_p99=5,
            worst_index=[0, 1],
        ),
    ]
    ledger.put(
        m.CorrectnessResult(
            id="cc0000000001",
            session_id=s.id,
            variant_id=v.id,
            workload=wa,
            passed=True,
            trials=5,
            seeds=[0, 1, 2, 3, 4],
            stats=stats[:1],
            suggested_class=m.OptimizationClass.C2,
            created_at=at(22),
        ),
        m.CorrectnessResult(
            id="cc0000000002",
            session_id=s.id,
            variant_id=v.id,
            workload=wb,
            passed=True,
            trials=5,
            seeds=[0, 1, 2, 3, 4],
            stats=stats,
            suggested_class=m.OptimizationClass.C2,
            created_at=at(22),
        ),
        m.CorrectnessResult(
            id="cc0000000003",
            session_id=s.id,
            variant_id=p.id,
            workload=wa,
            passed=False,
            trials=1,
            seeds=[0],
            exit_code=1,
            created_at=at(22),
        ),
    )
    ledger.put(
        m.Residual(
            id="re0000000001",
            session_id=s.id,
            variant_id=v.id,
            hypothesis_id=h.id,
            round_id=r.id,
            suggested=m.ResidualClass.AS_PREDICTED,
            confirmed=m.ResidualClass.AS_PREDICTED,
            note=t["residual_note"],
            confidence_from=m.Confidence.MEDIUM,
            confidence_to=m.Confidence.HIGH,
            created_at=at(23),
        ),
        m.Residual(
            id="re0000000002",
            session_id=s.id,
            variant_id=p.id,
            hypothesis_id=h.id,
            round_id=r.id,
            suggested=m.ResidualClass.METRIC_ONLY,
            created_at=at(23),
        ),
    )
    set_round_summary(ledger, r, next=t["summary_next"])
    dispose(
        ledger,
        s,
        v,
        "keep-default",
        optimization_class="C2",
        guards=[t["guard"] if t["guard"].strip() else "g"],
        fallback=t["fallback"] if t["fallback"].strip() else "f",
        failure_cases=[t["failure_case"]],
        remaining_bottlenecks=[t["remaining"]],
        reason=t["reason"],
        reopen_when=t["reopen_when"],
        id="d00000000001",
        created_at=at(40),
    )
    return ledger.get(m.Session, s.id) or s


def texts(**override: Any) -> dict[str, str]:
    return {**READABLE, **override}
