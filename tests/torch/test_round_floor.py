"""The round's command-line table applies the roofline floor and the second look
(issue 20, build 7): the rule is session's (verdicts.shown_verdict with the baseline's
floor from session.profile.run.baseline_floors), the table and --json only say it.

Rows are written as the engine writes them (a real SQLite ledger), with a baseline
profile whose floor is known: 1 TFLOP per 2 ms step against probes of 700 TFLOP/s and
4 TB/s (taken at 2×) gives a floor of 0.714 ms, a least ratio of 0.357.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path

from ledger import Ledger
from session import check_words
from session import evidence as ev
from session import models as m
from session.profile.run import summarize
from tui.commands.round_cmd import report_round

GPU_ROW = {
    "device": "cuda:0", "device_name": "NVIDIA H200", "dtype": "bfloat16", "step_ms": 2.0,
    "work": {"flops": 1.0e12, "bytes": 9.0e9, "io_bytes": 2.0e9},
    "probe": {"bandwidth_bytes_per_s": 4.0e12, "flops_per_s": 7.0e14, "how": "copy, matmul"},
}  # fmt: skip


def _round(tmp_path: Path, ratios: dict[str, float], profile: bool = True) -> tuple[Path, dict]:
    path = tmp_path / "ledger.db"
    with Ledger.open(path) as ledger:
        session = m.Session(title="floor", repo=str(tmp_path), contract=m.Contract(
            workloads=[m.Workload(name="e2e", command="python bench.py")]))  # fmt: skip
        snap = m.Snapshot(commit="a" * 40, ref="refs/gpuopt/snapshots/a")
        base = m.Baseline(id="ba5e11000001", session_id=session.id, snapshot=snap,
                          environment=m.EnvironmentFingerprint(),
                          contract_hash=session.contract.stable_hash(), reference={"e2e": 2.0},
                          reproducibility=m.Reproducibility.REPRODUCIBLE)  # fmt: skip
        variants = [
            m.Variant(session_id=session.id, name=name,
                      snapshot=m.Snapshot(commit=f"{i + 1:x}" * 40, ref=f"refs/gpuopt/s/{i}"))
            for i, name in enumerate(ratios)
        ]  # fmt: skip
        rnd = m.Round(session_id=session.id, baseline_id=base.id, number=1, seed=7,
                      variant_ids=[v.id for v in variants], status=m.RoundStatus.COMPLETED,
                      blocks=12, min_blocks=10, baseline_check=1.0,
                      baseline_reproduced=True)  # fmt: skip
        ledger.put(session, base, *variants, rnd)
        for v in variants:
            r = ratios[v.name]
            ledger.put(m.Comparison(round_id=rnd.id, variant_id=v.id, workload="e2e", n=12,
                                    ratio=r, ci_low=r * 0.98, ci_high=r * 1.02,
                                    verdict=m.Verdict.FASTER))  # fmt: skip
        if profile:
            summary = summarize(GPU_ROW, "baseline", "e2e")
            assert check_words.roofline_floor(summary) is not None
            ev.add_profile(ledger, session, summary, title="profile of e2e (baseline)")
        comparisons = ledger.list(m.Comparison, round_id=rnd.id)
        names = {v.id: v.name for v in variants}
        return path, {"rnd": rnd, "comparisons": comparisons, "corrects": [],
                      "names": names, "session": session}  # fmt: skip


def _report(path: Path, parts: dict, as_json: bool = False) -> str:
    args = argparse.Namespace(ledger=str(path), json=as_json)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = report_round(args, parts["rnd"], parts["comparisons"], parts["corrects"],
                            parts["names"], parts["session"])  # fmt: skip
    assert code == 0
    return out.getvalue()


def _row(out: str, name: str) -> str:
    rows = [line for line in out.splitlines() if f" {name} " in f" {line} "]
    assert rows, out
    return " ".join(rows)


def test_the_round_table_says_below_the_floor_and_never_faster(tmp_path: Path) -> None:
    # 0.3 × 2 ms = 0.6 ms < 0.714 ms: impossible; 0.05 below it too; 0.5 possible, 2×
    path, parts = _round(tmp_path, {"impossible": 0.3, "possible": 0.5})
    out = _report(path, parts)
    impossible = _row(out, "impossible")
    assert "FASTER" not in impossible, out
    assert "INCONCLUSIVE" in impossible
    assert check_words.BELOW_FLOOR in " ".join(out.split()), out
    assert "FASTER" in _row(out, "possible")
    doc = json.loads(_report(path, parts, as_json=True))
    by_name = {c["variant"]: c for c in doc["comparisons"]}
    assert by_name["impossible"]["verdict"] == "INCONCLUSIVE"
    assert by_name["impossible"]["speed_verdict"] == "FASTER"
    assert by_name["impossible"]["below_floor"] is True
    assert check_words.BELOW_FLOOR in by_name["impossible"]["verdict_words"]
    assert by_name["possible"]["verdict"] == "FASTER"
    assert by_name["possible"]["below_floor"] is False


def test_over_ten_times_faster_asks_for_a_second_look_in_the_round_output(tmp_path: Path) -> None:
    # no profile, so no floor: a 20× speedup stays FASTER, with the second look said
    path, parts = _round(tmp_path, {"twenty": 0.05, "modest": 0.5}, profile=False)
    out = _report(path, parts)
    assert "second look" in _row(out, "twenty")
    flat = " ".join(out.split())
    assert "20× faster: have a second look at the candidate before keeping it" in flat, out
    assert "second look" not in _row(out, "modest")
    doc = json.loads(_report(path, parts, as_json=True))
    by_name = {c["variant"]: c for c in doc["comparisons"]}
    assert by_name["twenty"]["second_look"].startswith("20× faster")
    assert by_name["modest"]["second_look"] == ""
