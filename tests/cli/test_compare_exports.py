"""Issue 21, exports: our JSON holds the fields and types hyperfine's own scripts read
(DESIGN.md "hyperfine compatibility"; their code is not vendored), with hyperfine 1.20's
`memory_usage_byte`; a CSV of every raw sample; markdown's Relative with its interval;
the shell's cost said. Real commands, in-process CLI."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tui.cli import main

# A peak above gpuopt's own: Linux counts the parent's peak in a child's, so the command
# line runs in a process of its own (a pytest process is larger than the workload).
BIG = f"{sys.executable} -c 'x = bytearray(400_000_000)'"
ROOT = Path(__file__).resolve().parents[2]


def gpuopt(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _is_num(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


@pytest.mark.slow
def test_the_json_holds_what_hyperfines_scripts_read(tmp_path):
    js, md, raw = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.csv"
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "compare", "-N", "true", BIG, "--runs", "6",
         "--max-runs", "6", "--export-json", str(js), "--export-markdown", str(md),
         "--export-csv", str(raw)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(js.read_text())
    for r in doc["results"]:
        assert isinstance(r["command"], str)
        for key in ("mean", "stddev", "median", "user", "system", "min", "max"):
            assert _is_num(r[key]), (key, r[key])
        assert len(r["times"]) == 6 and all(_is_num(t) and t > 0 for t in r["times"])
        assert r["min"] <= r["median"] <= r["max"] and r["min"] == min(r["times"])
        assert r["exit_codes"] == [0] * 6
        assert isinstance(r["parameters"], dict)
    big = doc["results"][1]
    # hyperfine 1.20's field: one peak RSS per run, in bytes (400 MB allocated: well above
    # gpuopt's own peak, which Linux counts in a child's)
    assert len(big["memory_usage_byte"]) == 6
    assert all(isinstance(b, int) and b > 400_000_000 for b in big["memory_usage_byte"])
    # `true` peaks below gpuopt's own: Linux counts the parent's, so no figure is given
    assert "memory_usage_byte" not in doc["results"][0]
    assert doc["gpuopt"]["shell"] == {"shell": None, "cost_s": None, "subtracted": False}
    (rel,) = doc["gpuopt"]["comparisons"]
    assert rel["ci_confidence"] == doc["gpuopt"]["look_confidence"] or rel["verdict"] in (
        "INCONCLUSIVE", "MEASURABLE",
    )  # fmt: skip
    # markdown: the paired ratio with the interval that decided, labelled
    row = next(ln for ln in md.read_text().splitlines() if "bytearray" in ln)
    # in the one interval format of session.format: "1.030 (99% CI 1.010–1.050)"
    assert re.search(r"\(\d+(\.\d+)?% CI \d+\.\d{3}–\d+\.\d{3}\)", row.split("|")[5]), row
    # CSV: every timed run, as it ran
    rows = list(csv.DictReader(io.StringIO(raw.read_text())))
    assert len(rows) == 12 and {r["command_index"] for r in rows} == {"0", "1"}
    assert all(float(r["time_s"]) > 0 for r in rows)
    assert all(int(r["memory_usage_byte"]) > 120_000_000 for r in rows if r["command_index"] == "1")


def test_through_a_shell_its_cost_is_measured_and_said(tmp_path, capsys):
    js = tmp_path / "r.json"
    code, out, err = gpuopt(
        capsys, "compare", "true", "true", "--runs", "2", "--max-runs", "2",
        "--export-json", str(js),
    )  # fmt: skip
    assert code == 0, err
    shell = json.loads(js.read_text())["gpuopt"]["shell"]
    assert shell["shell"] == "bash" and shell["cost_s"] > 0 and shell["subtracted"] is False
    assert "shell bash: its start-up" in out and "not subtracted" in out
