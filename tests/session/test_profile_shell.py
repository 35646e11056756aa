"""Shell workloads under Nsight: with nsys and ncu on PATH (stand-ins that print samples of
the documented CSV output) `gpuopt profile` imports their summaries as profile evidence."""

from __future__ import annotations

import os
from pathlib import Path

from method_factory import make_baseline, open_ledger

from session import evidence as ev
from session import models as m
from session.profile.run import profile_arm

DATA = Path(__file__).parent / "data"
NSYS = """#!/bin/sh
case "$1" in
profile)
    shift; out=""
    while [ $# -gt 0 ]; do
        case "$1" in -o) out="$2"; shift 2;; --*) shift;; *) break;; esac
    done
    "$@" > /dev/null && : > "$out.nsys-rep";;
stats) cat "$SAMPLE_NSYS";;
esac
"""
NCU = '#!/bin/sh\ncat "$SAMPLE_NCU"\n'


def _tool(folder: Path, name: str, text: str) -> None:
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)


def test_nsys_and_ncu_summaries_become_profile_evidence(make_repo, tmp_path, monkeypatch):
    repo = make_repo(files={"bench.sh": "echo ran > ran.txt\n"})
    tools = tmp_path / "bin"
    tools.mkdir()
    _tool(tools, "nsys", NSYS)
    _tool(tools, "ncu", NCU)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SAMPLE_NSYS", str(DATA / "profile_nsys_stats.csv"))
    monkeypatch.setenv("SAMPLE_NCU", str(DATA / "ncu_raw_sample.csv"))
    with open_ledger(tmp_path) as ledger:
        s = m.Session(
            title="shell",
            repo=str(repo),
            contract=m.Contract(workloads=[m.Workload(name="bench", command="sh bench.sh")]),
        )
        ledger.put(s)
        b = make_baseline(ledger, s)
        head = (repo / ".git" / "refs" / "heads" / "main").read_text().strip()
        b.snapshot = m.Snapshot(commit=head, ref="refs/heads/main")
        ledger.put(b)
        runs, left = profile_arm(ledger, s, "baseline")
    assert left == [] and len(runs) == 1 and runs[0].evidence is not None, runs[0].error
    summary = runs[0].evidence.summary
    assert summary["tool"] == "nsys" and summary["launches"] == 70
    assert summary["dominant"]["name"] == "ampere_sgemm_128x64_tn"
    assert summary["memcpy_memset"] == 6
    assert summary["ncu"]["top_kernels"][0]["name"] == "ampere_sgemm_128x64_tn"
    assert runs[0].evidence.path and runs[0].evidence.path.endswith(".nsys-rep")
    line = ev.describe(runs[0].evidence)
    assert line.startswith("70 launch(es) in the whole run; dominant ampere")
