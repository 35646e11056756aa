"""Issue 21: drift never dead-ends an interleaved round. A workload whose figure rises with
every run (a counter file outside the repository: the machine slowing down) makes each
fresh default baseline drift; with no telemetry cause named, each one is followed by a
round that runs to its end, paired, and says the baseline's absolute figures are
unreliable. In-process CLI, real git, real processes."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from ledger import Ledger
from session import models as m
from tui.cli import main


def gpuopt(capsys, ledger: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--ledger", str(ledger), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_three_fresh_default_baselines_on_a_drifting_workload_each_get_a_round(
    make_repo, tmp_path, capsys
):
    repo = make_repo()
    counter = tmp_path / "count"
    drift = f"n=$(cat {counter} 2>/dev/null || echo 100); n=$((n+3)); echo $n > {counter}; echo $n"
    ledger = tmp_path / "l.db"
    code, out, err = gpuopt(
        capsys, ledger, "new", "--repo", str(repo), "--title", "drift",
        "--workload", f"w={drift}", "--metric", "regex:(?P<value>[0-9.]+)",
    )  # fmt: skip
    assert code == 0, err
    sid = out.strip()
    code, _, err = gpuopt(capsys, ledger, "variant", "add", sid, "--name", "same", "--ref", "HEAD")
    assert code == 0, err
    for attempt in range(3):
        code, out, err = gpuopt(capsys, ledger, "baseline", sid, "--json")
        assert code == 0, (attempt, out, err)  # a warning, not a refusal
        b = json.loads(out)
        assert b["reproducibility_detail"].startswith("drifting at ±2% (a warning"), b
        code, out, err = gpuopt(capsys, ledger, "round", sid, "--json")
        assert code == 0, (attempt, out, err)
        rnd = json.loads(out)["round"]
        assert rnd["status"] == "completed" and rnd["blocks"] >= 10, rnd
        assert rnd["baseline_id"] == b["id"]
        assert rnd["summary"]["baseline_reference_unreliable"] is True
        assert any("absolute figures are unreliable" in n for n in rnd["summary"]["notes"])
    code, md, err = gpuopt(capsys, ledger, "export", sid)
    assert code == 0, err
    assert "absolute figures are unreliable" in md
    # every raw sample as CSV: each run of the three baselines and rounds, warm-ups marked
    code, text, err = gpuopt(capsys, ledger, "export", sid, "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(text)))
    with Ledger.open(ledger) as led:
        assert len(rows) == len(led.list(m.Run, session_id=sid))
    assert {r["phase"] for r in rows} == {"baseline", "round"}
    assert {r["round"] for r in rows if r["phase"] == "round"} == {"1", "2", "3"}
    assert all(float(r["value"]) > 0 for r in rows if r["status"] == "ok")
