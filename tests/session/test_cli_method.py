"""The method's commands: hypothesis, preflight, evidence, dispose (and export of the result)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from method_factory import (
    error_stats,
    make_baseline,
    make_comparison,
    make_correctness,
    make_round,
    make_session,
    make_variant,
)

from ledger import Ledger
from session import models as m
from tui.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "ledger.db"
    with Ledger.open(path) as ledger:
        s = make_session(ledger)
        b = make_baseline(ledger, s)
        v = make_variant(ledger, s)
        r = make_round(ledger, s, b, [v])
        make_comparison(ledger, r, v)
        make_correctness(ledger, s, v, stats=[error_stats()])
    return path


def gpuopt(db, *args, capsys):
    code = main(["--ledger", str(db), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_hypothesis_add_list_status_edit(db, capsys):
    code, out, err = gpuopt(
        db,
        "hypothesis",
        "add",
        "5e55",
        "--title",
        "fused softmax",
        "--mechanism",
        "logits round trip through memory",
        "--predicted-evidence",
        "fewer kernel launches",
        "--falsifier",
        "count launches",
        "--variant",
        "fused",
        capsys=capsys,
    )
    assert code == 0, err
    hid = out.strip()
    assert len(hid) == 12
    assert "concern area" in err  # suggestions are shown
    code, out, err = gpuopt(
        db,
        "hypothesis",
        "status",
        "5e55",
        hid[:6],
        "--status",
        "rejected",
        "--why",
        "no gain",
        capsys=capsys,
    )
    assert code == 2 and "reopen" in err
    code, out, err = gpuopt(
        db,
        "hypothesis",
        "status",
        "5e55",
        hid,
        "--status",
        "rejected",
        "--confidence",
        "low",
        "--why",
        "no gain on H200",
        "--reopen-when",
        "rows exceed 4096",
        capsys=capsys,
    )
    assert code == 0 and "rejected, confidence low" in out
    code, out, _ = gpuopt(db, "hypothesis", "list", "5e55", "--json", capsys=capsys)
    rows = json.loads(out)
    assert rows[0]["status"] == "rejected"
    # the reopening condition's change is in the history too (it and the row agree)
    fields = [e["field"] for e in rows[0]["history"]][-3:]
    assert fields == ["confidence", "edited", "status"]
    # a similar one brings the rejected one back, with its reopening condition
    code, out, err = gpuopt(
        db,
        "hypothesis",
        "add",
        "5e55",
        "--title",
        "softmax fusion again",
        "--mechanism",
        "logits memory round trip",
        capsys=capsys,
    )
    assert code == 0 and hid in err and "rows exceed 4096" in err
    new = out.strip()
    # one factor: the variant already tests the first hypothesis
    code, _, err = gpuopt(
        db, "hypothesis", "edit", "5e55", new, "--variant", "fused", capsys=capsys
    )
    assert code == 2 and "one factor" in err
    code, out, err = gpuopt(
        db,
        "hypothesis",
        "edit",
        "5e55",
        new,
        "--cost",
        "an hour",
        "--why",
        "estimated",
        capsys=capsys,
    )
    assert code == 0 and "an hour" in out


def test_preflight_flags(db, capsys):
    code, out, err = gpuopt(
        db,
        "preflight",
        "5e55",
        "--measured",
        "lifetime=peak 2 GiB at step 3",
        "--hand-off",
        "residency=tiering_and_migration:host offload planned",
        "--not-applicable",
        "identity=nothing is cached",
        "--unknown",
        "schedule",
        "--done",
        "3=1.25 s, 57 launches",
        "--done",
        "14",
        "--note",
        "1=tolerance 1e-5",
        "--bottleneck",
        "launch-bound",
        "--bottleneck-evidence",
        "57 kernels of 4 us",
        "--json",
        capsys=capsys,
    )
    assert code == 0, err
    view = json.loads(out)
    kinds = {q["question"]: q["kind"] for q in view["questions"]}
    assert kinds["lifetime"] == "measured" and kinds["residency"] == "handed_off"
    assert kinds["identity"] == "not_applicable" and kinds["schedule"] == "unknown"
    items = {c["number"]: c for c in view["checklist"]}
    assert items[3]["done"] and items[3]["note"] == "1.25 s, 57 launches"
    assert items[14]["done"] and not items[1]["done"] and items[1]["note"] == "tolerance 1e-5"
    assert view["bottleneck"] == "launch-bound"
    code, out, _ = gpuopt(db, "preflight", "5e55", capsys=capsys)
    assert code == 0 and "Bottleneck: launch-bound" in out and "[x]  3." in out
    for bad in (
        ["--measured", "nothing"],
        ["--unknown", "bogus"],
        ["--done", "99"],
        ["--hand-off", "lifetime=nowhere"],
        ["--bottleneck", "compute-bound"],
        ["--not-applicable", "mutation=  "],
    ):
        code, _, err = gpuopt(db, "preflight", "5e55", *bad, capsys=capsys)
        assert code == 2 and err.startswith("gpuopt: ") and err.count("\n") == 1, (bad, err)


def test_evidence_add(db, capsys, tmp_path):
    code, out, err = gpuopt(
        db,
        "evidence",
        "add",
        "5e55",
        "--variant",
        "fused",
        "--ncu-csv",
        str(DATA / "ncu_raw_sample.csv"),
        capsys=capsys,
    )
    assert code == 0, err
    assert "ncu_csv" in out and "ampere_sgemm_128x64_tn" in out
    code, out, _ = gpuopt(
        db,
        "evidence",
        "add",
        "5e55",
        "--torch-profile",
        str(DATA / "torch_table_cuda.txt"),
        "--json",
        capsys=capsys,
    )
    assert json.loads(out)["summary"]["device"] == "CUDA"
    code, out, _ = gpuopt(db, "evidence", "add", "5e55", "--note", "gap of 40 us", capsys=capsys)
    assert code == 0 and "gap of 40 us" in out
    code, out, _ = gpuopt(
        db, "evidence", "add", "5e55", "--measurement", "peak=2,048 MiB", capsys=capsys
    )
    assert code == 0 and "peak = 2048.0 MiB" in out
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    code, _, err = gpuopt(db, "evidence", "add", "5e55", "--ncu-csv", str(bad), capsys=capsys)
    assert code == 2 and "Nsight Compute" in err
    code, _, err = gpuopt(
        db, "evidence", "add", "5e55", "--file", str(tmp_path / "nope"), capsys=capsys
    )
    assert code == 2 and "no such file" in err
    code, out, _ = gpuopt(db, "evidence", "list", "5e55", capsys=capsys)
    assert out.count("\n") == 4


def test_dispose_gates_through_the_command_line(db, capsys):
    code, _, err = gpuopt(db, "dispose", "5e55", "fused", "--choice", "keep-default", capsys=capsys)
    assert code == 2
    assert "refused:" in err and "guard" in err and "fallback" in err and "class" in err
    assert "preflight questions still unknown: lifetime, backing" in err  # flagged again, one line
    code, out, err = gpuopt(
        db,
        "dispose",
        "5e55",
        "fused",
        "--choice",
        "keep-default",
        "--class",
        "C2",
        "--guard",
        "n <= 4096",
        "--fallback",
        "unfused path",
        "--failure-case",
        "n > 4096",
        "--remaining",
        "attention matmul",
        "--reason",
        "faster",
        capsys=capsys,
    )
    assert code == 0, err
    assert "keep as the default path (C2)" in out
    with Ledger.open(db, readonly=True) as ledger:
        (d,) = ledger.list(m.Disposition)
    assert d.guards == ["n <= 4096"] and d.failure_cases == ["n > 4096"]
    assert len(d.open_questions) == 6
    code, out, _ = gpuopt(db, "export", "5e55", "--format", "md", capsys=capsys)
    assert code == 0 and "## Measurement plan" in out and "n &lt;= 4096" in out


def test_dispose_refusal_exits_2_in_a_real_process(db):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui",
            "--ledger",
            str(db),
            "dispose",
            "5e55",
            "fused",
            "--choice",
            "reject",
            "--reason",
            "slower",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "gpuopt: refused: a rejection needs a reopening condition (--reopen-when)"
    )
    assert "Traceback" not in proc.stderr


def test_hypothesis_add_refuses_a_taken_variant_before_writing(db, capsys):
    code, _, _ = gpuopt(
        db, "hypothesis", "add", "5e55", "--title", "one", "--variant", "fused", capsys=capsys
    )
    assert code == 0
    code, _, err = gpuopt(
        db, "hypothesis", "add", "5e55", "--title", "two", "--variant", "fused", capsys=capsys
    )
    assert code == 2 and "one factor" in err
    with Ledger.open(db, readonly=True) as ledger:
        assert [h.title for h in ledger.list(m.Hypothesis)] == ["one"]


def test_status_change_is_all_or_nothing(db, capsys):
    _, out, _ = gpuopt(db, "hypothesis", "add", "5e55", "--title", "t", capsys=capsys)
    hid = out.strip()
    code, _, err = gpuopt(
        db,
        "hypothesis",
        "status",
        "5e55",
        hid,
        "--confidence",
        "high",
        "--status",
        "rejected",
        "--why",
        "no gain",
        capsys=capsys,
    )
    assert code == 2 and "--reopen-when" in err
    with Ledger.open(db, readonly=True) as ledger:
        h = ledger.get(m.Hypothesis, hid)
    assert h.confidence is m.Confidence.MEDIUM and h.status is m.HypothesisStatus.PROPOSED


def test_residual_and_round_summary_commands(db, capsys):
    _, out, _ = gpuopt(
        db,
        "hypothesis",
        "add",
        "5e55",
        "--title",
        "fusion",
        "--variant",
        "fused",
        "--predicted-evidence",
        "fewer kernel launches",
        capsys=capsys,
    )
    hid = out.strip()
    code, out, err = gpuopt(db, "hypothesis", "residual", "5e55", "fused", capsys=capsys)
    assert code == 0, err
    assert out.startswith("suggested: metric_only") and "confirm it with" in out
    code, out, err = gpuopt(
        db,
        "hypothesis",
        "residual",
        "5e55",
        "fused",
        "--mechanism-moved",
        "yes",
        "--confirm",
        "as_predicted",
        "--confidence",
        "high",
        "--why",
        "ncu shows one kernel",
        capsys=capsys,
    )
    assert code == 0, err
    assert "suggested: as_predicted" in out and "confidence medium → high" in out
    with Ledger.open(db, readonly=True) as ledger:
        (res,) = ledger.list(m.Residual)  # the first suggestion was replaced, not repeated
        assert res.confirmed is m.ResidualClass.AS_PREDICTED
        assert ledger.get(m.Hypothesis, hid).confidence is m.Confidence.HIGH
    code, out, _ = gpuopt(
        db,
        "hypothesis",
        "summary",
        "5e55",
        "--next",
        "re-profile with ncu",
        "--json",
        capsys=capsys,
    )
    summary = json.loads(out)["summary"]
    assert summary["next"] == "re-profile with ncu"
    assert "moved as predicted" in summary["residuals"]
    assert "medium → high" in summary["confidence_updates"]
    code, out, _ = gpuopt(db, "hypothesis", "summary", "5e55", "1", capsys=capsys)
    assert code == 0 and "next: re-profile with ncu" in out and "(from the ledger)" in out
    code, _, err = gpuopt(db, "hypothesis", "summary", "5e55", "9", capsys=capsys)
    assert code == 2 and "no round" in err


def test_preflight_answer_linked_to_evidence(db, capsys):
    _, out, _ = gpuopt(
        db, "evidence", "add", "5e55", "--measurement", "peak=2.1 GiB", capsys=capsys
    )
    eid = out.split()[0]
    code, out, err = gpuopt(
        db, "preflight", "5e55", "--evidence", f"lifetime={eid}", "--json", capsys=capsys
    )
    assert code == 0, err
    q = next(x for x in json.loads(out)["questions"] if x["question"] == "lifetime")
    assert q["kind"] == "measured" and q["evidence_id"] == eid
    code, _, err = gpuopt(db, "preflight", "5e55", "--evidence", "backing=nope", capsys=capsys)
    assert code == 2 and "no evidence" in err
