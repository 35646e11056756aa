"""A failed check is never presented as FASTER, in any export this module owns (markdown,
JSON, the review list), and a reviewer reading only the first 40 lines of the record knows
what was kept, by how much, whether it is correct, and on which round it rests.

The session is built by hand: three baseline attempts (two drifting, same environment),
three rounds (the first two untrusted: baseline not reproduced), a variant `nomax` that is
faster but gives NaN where the baseline does not, a kept `fused` and a `same` control.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ledger import Ledger
from session import models as m
from session.record import build_export, gather, to_json, to_markdown

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
WORKLOAD = "softmax"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _commit(n: int) -> str:
    return f"{n:x}".rjust(40, "a")


def _snap(n: int) -> m.Snapshot:
    return m.Snapshot(
        id=f"snap{n:08d}", commit=_commit(n), ref=f"refs/gpuopt/snapshots/snap{n:08d}"
    )


ENV = m.EnvironmentFingerprint(
    gpus=[m.GpuInfo(name="NVIDIA H200", driver="570.86", max_sm_clock_mhz=1980, mig_mode=False)],
    python="3.11.9", os="Linux", kernel="6.8.0", cpu_model="Xeon 8480", cpu_count=16,
    hostname="gpu-box-7", torch="2.7.0",
)  # fmt: skip

RATIOS = {"fused": 0.206, "nomax": 0.165, "same": 1.003}
SPEED = {"fused": m.Verdict.FASTER, "nomax": m.Verdict.FASTER, "same": m.Verdict.SAME}


def build_broken_session(ledger: Ledger) -> m.Session:
    contract = m.Contract(
        metric=m.Metric(name="time per call", unit="ms"),
        workloads=[
            m.Workload(name=WORKLOAD, command="python bench.py", scope=m.WorkloadScope.ISOLATED)
        ],
    )
    s = m.Session(id="5e55b0000001", title="softmax fusion", repo="/home/me/softmax",
                  contract=contract, created_at=at(0))  # fmt: skip
    ledger.put(s)
    baselines = []
    for i in range(3):
        ok = i == 2
        baselines.append(
            m.Baseline(
                id=f"ba5e0000000{i}", session_id=s.id, snapshot=_snap(1), environment=ENV,
                contract_hash=contract.stable_hash(), reference={WORKLOAD: 0.412},
                reproducibility=m.Reproducibility.REPRODUCIBLE if ok
                else m.Reproducibility.NOT_REPRODUCIBLE,
                reproducibility_detail="split-half ratio 1.004" if ok else "halves differ by 6%",
                created_at=at(i),
            )
        )  # fmt: skip
    ledger.put(*baselines)
    h = m.Hypothesis(id="4f00b0000001", session_id=s.id, title="one fused pass",
                     falsifier="the operator count drops but the time does not",
                     predicted_direction=m.Direction.LOWER,
                     created_at=at(3))  # fmt: skip
    ledger.put(h)
    variants = {
        name: m.Variant(id=f"va{n:010d}", session_id=s.id, name=name, hypothesis_id=h.id,
                        snapshot=_snap(n + 2), created_at=at(4))
        for n, name in enumerate(RATIOS)
    }  # fmt: skip
    ledger.put(*variants.values())
    for number in (1, 2, 3):
        trusted = number == 3
        r = m.Round(
            id=f"40d0b000000{number}", session_id=s.id, baseline_id=baselines[-1].id,
            number=number, variant_ids=[v.id for v in variants.values()], seed=number,
            status=m.RoundStatus.COMPLETED, blocks=12, baseline_check=1.0 if trusted else 1.09,
            baseline_reproduced=trusted, started_at=at(10 * number), ended_at=at(10 * number + 5),
        )  # fmt: skip
        ledger.put(r)
        for name, v in variants.items():
            ratio = RATIOS[name]
            ledger.put(
                m.Comparison(round_id=r.id, variant_id=v.id,
                             workload=WORKLOAD, n=12, ratio=ratio, ci_low=ratio * 0.98,
                             ci_high=ratio * 1.02, verdict=SPEED[name])
            )  # fmt: skip
        runs = []
        for blk in range(3):
            for arm, value in [("baseline", 0.41 + blk * 0.001)] + [
                (v.id, 0.41 * RATIOS[n]) for n, v in variants.items()
            ]:
                runs.append(
                    m.Run(session_id=s.id, round_id=r.id, arm=arm, workload=WORKLOAD,
                          block=blk, value=value, trust=m.Trust.CLEAN)
                )  # fmt: skip
        ledger.put(*runs)
        nan = m.ErrorStats(output="out", nan_ref=0, nan_new=80, max_abs=4.77e-7, max_rel=1.13e-6,
                           mismatches=80, mismatch_share=80 / 262144, atol=1e-5, rtol=1.3e-6,
                           passed=False)  # fmt: skip
        fine = m.ErrorStats(output="out", max_abs=2.4e-7, max_rel=1.9e-6, atol=1e-5, rtol=1.3e-6,
                            passed=True)  # fmt: skip
        ledger.put(
            m.CorrectnessResult(session_id=s.id, variant_id=variants["nomax"].id,
                                workload=WORKLOAD, passed=False, trials=5, stats=[nan],
                                created_at=at(10 * number + 1)),
            m.CorrectnessResult(session_id=s.id, variant_id=variants["fused"].id,
                                workload=WORKLOAD, passed=True, trials=5, stats=[fine],
                                suggested_class=m.OptimizationClass.C2,
                                created_at=at(10 * number + 1)),
            m.Audit(session_id=s.id, arm="baseline", workload=WORKLOAD, peak_bytes=48 << 20,
                    kernel_launches=5, created_at=at(10 * number + 2)),
            m.Audit(session_id=s.id, arm=variants["fused"].id, workload=WORKLOAD,
                    peak_bytes=32 << 20, kernel_launches=1, created_at=at(10 * number + 2)),
        )  # fmt: skip
    ledger.put(
        m.Disposition(id="d0b000000001", session_id=s.id, variant_id=variants["fused"].id,
                      choice=m.DispositionChoice.KEEP_DEFAULT,
                      optimization_class=m.OptimizationClass.C2, guards=["fp32 only"],
                      fallback="the four-pass softmax", reason="fewer passes",
                      created_at=at(40)),
        m.Disposition(id="d0b000000002", session_id=s.id, variant_id=variants["nomax"].id,
                      choice=m.DispositionChoice.REJECT, reason="NaN for large logits",
                      created_at=at(41)),
    )  # fmt: skip
    return s


@pytest.fixture
def exported(tmp_path: Path) -> dict[str, Any]:
    with Ledger.open(tmp_path / "l.db") as ledger:
        s = build_broken_session(ledger)
        x = gather(ledger, s)
        data = build_export(ledger, s)
    return {"model": x, "data": data, "md": to_markdown(x), "json": to_json(data)}


def _rows_naming(md: str, name: str) -> list[str]:
    return [line for line in md.splitlines() if name in line]


def test_markdown_never_shows_a_broken_variant_as_faster(exported: dict[str, Any]) -> None:
    md = exported["md"]
    rows = [r for r in _rows_naming(md, "nomax") if r.startswith("|")]
    assert rows, "nomax appears in no table"
    for row in rows:
        if row.startswith(("| nomax ", "| round ")):  # its own row: no cell says faster
            assert "FASTER" not in row and "faster" not in row, row
        for part in row.replace("|", ";").split(";"):  # a line naming several variants
            if "nomax" in part:
                assert "FASTER" not in part and "faster" not in part, part
    verdict_rows = [r for r in rows if "BROKEN" in r]
    assert len(verdict_rows) >= 4  # the summary and the three rounds
    assert all("NaN 0→80" in r for r in verdict_rows)


def test_json_carries_the_shown_verdict_and_its_parts(exported: dict[str, Any]) -> None:
    data = json.loads(exported["json"])
    assert data["version"] == 2
    for r in data["rounds"]:
        by = {c["variant"]: c for c in r["comparisons"]}
        assert by["nomax"]["verdict"] == "BROKEN" and by["nomax"]["speed_verdict"] == "FASTER"
        assert by["nomax"]["correct"] is False and by["fused"]["correct"] is True
        assert by["same"]["correct"] is None and by["same"]["verdict"] == "SAME"
        assert all(c["trusted"] is (r["number"] == 3) for c in r["comparisons"])
        assert all(c["verdict"] != "FASTER" or c["correct"] is not False for c in r["comparisons"])


def test_the_first_40_lines_say_what_was_kept_by_how_much_and_on_which_round(
    exported: dict[str, Any],
) -> None:
    head = exported["md"].splitlines()[:40]
    text = "\n".join(head)
    assert "NVIDIA H200" in text and "ba5e00000002" in text
    fused = next(r for r in head if r.startswith("| fused |"))
    assert "FASTER" in fused and "4.85× faster" in fused and "keep as the default path" in fused
    assert "round 3" in fused and "passes" in fused and "C2" in fused
    assert "0.411 → 0.08446 ms" in fused  # absolute medians of both arms
    nomax = next(r for r in head if r.startswith("| nomax |"))
    assert "BROKEN (NaN 0→80)" in nomax and "reject" in nomax
    assert "2 earlier attempts" in text


def test_rows_carry_their_round_and_words_not_stored_values(exported: dict[str, Any]) -> None:
    md = exported["md"]
    body = md.split("# Details", 1)[1]
    for leak in ("not_reproducible", "as_predicted", "nothing_moved", "&nbsp;", "keep_default"):
        assert leak not in md, leak
    corr = body.split("## Correctness", 1)[1].split("## Audits", 1)[0]
    rows = [r for r in corr.splitlines() if r.startswith("| round ") and r[8].isdigit()]
    assert {r.split("|")[1].strip() for r in rows} == {"round 1", "round 2", "round 3"}
    assert "48 MiB → 32 MiB" in body  # bytes in MiB, not raw counts
    assert "Round 1 (completed, 12 blocks, untrusted: baseline not reproduced)" in body
    assert "### Round 3 (completed, 12 blocks)\n" in body
    # round summaries in words; the decisions made after round 3 only in round 3's
    summaries = body.split("Round 1 summary:", 1)[1].split("## Correctness", 1)[0]
    assert "as_predicted" not in summaries and "keep-default" not in summaries
    r1 = summaries.split("Round 2 summary:", 1)[0]
    assert "| disposition | — |" in r1
    # the error headline counts the NaNs: no tiny errors shown alone for a broken output
    assert "NaN 0→80; finite values: max abs 4.8e-7" in body
    # failed baseline attempts one line each, the environment once
    assert body.count("| GPU | NVIDIA H200") == 1
    assert body.count("halves differ by 6%") == 2
    # the plan reproduces the baseline the rounds rest on, not each failed attempt
    assert "reference results of baseline ba5e00000002" in body
    assert "reference results of baseline ba5e00000000" not in body
    # a disposition made after round 3 rests on round 3, not on the untrusted ones
    assert "| rests on | round 3 |" in body


def test_summary_fits_in_40_lines(exported: dict[str, Any]) -> None:
    lines = exported["md"].splitlines()
    assert lines.index("## Hypotheses") < 40
