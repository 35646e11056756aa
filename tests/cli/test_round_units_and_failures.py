"""The command line names each workload's own figure (a torch workload's is ms per call,
not the contract's wall time) and says a FAILED/BROKEN arm in words: the verdict, its note
and the last lines of its exception. Real models, printed by the command's own functions."""

from __future__ import annotations

from session import models as m
from tui.commands.baseline import print_baseline
from tui.commands.round_cmd import print_round

TRACEBACK = "\n".join(
    ["Traceback (most recent call last):"]
    + [f'  File "frame{i}.py", line {i}, in f{i}' for i in range(12)]
    + ["RuntimeError: shape mismatch in fused_gelu"]
)


def _session() -> m.Session:
    contract = m.Contract(
        workloads=[
            m.Workload.parse("gelu=torch:kernel:run"),
            m.Workload.parse("e2e=python bench.py"),
        ]
    )
    return m.Session(title="t", repo="/tmp/r", contract=contract)


def test_round_table_names_figures_and_failures(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    s = _session()
    rnd = m.Round(session_id=s.id, baseline_id="b", min_blocks=2, blocks=2,
                  status=m.RoundStatus.COMPLETED)  # fmt: skip
    failed = m.Comparison(round_id=rnd.id, variant_id="v1", workload="gelu", n=0,
                          verdict=m.Verdict.FAILED, error=TRACEBACK,
                          note="dropped from later blocks: its warm-up failed")  # fmt: skip
    broken = m.Comparison(round_id=rnd.id, variant_id="v2", workload="gelu", n=0,
                          verdict=m.Verdict.BROKEN,
                          error="ImportError: no module named k")  # fmt: skip
    ok = m.Comparison(round_id=rnd.id, variant_id="v2", workload="e2e", n=2, ratio=0.9,
                      verdict=m.Verdict.FASTER)  # fmt: skip
    capsys.readouterr()
    print_round(rnd, [failed, broken, ok], {"v1": "fused", "v2": "tiled"}, s)
    out = capsys.readouterr().out
    assert "time per call (ms), median of the calls after warm-up" in out
    assert "e2e: wall time (s)" in out
    assert "FAILED fused/gelu: dropped from later blocks: its warm-up failed" in out
    assert "RuntimeError: shape mismatch in fused_gelu" in out
    assert "frame11.py" in out and "frame2.py" not in out  # the end, not the whole traceback
    assert "BROKEN tiled/gelu" in out and "ImportError: no module named k" in out
    assert "FASTER" in out and "tiled/e2e" not in out  # a passing arm gets no failure line


def test_baseline_table_names_each_workloads_figure(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    s = _session()
    b = m.Baseline(id="b1", session_id=s.id, snapshot=m.Snapshot(commit="a" * 40, ref="HEAD"),
                   environment=m.EnvironmentFingerprint(), contract_hash="h",
                   reference={"gelu": 1.25, "e2e": 3.5})  # fmt: skip
    capsys.readouterr()
    print_baseline(b, s)
    out = capsys.readouterr().out
    gelu = next(line for line in out.splitlines() if line.startswith("gelu"))
    e2e = next(line for line in out.splitlines() if line.startswith("e2e"))
    assert "1.25" in gelu and "time per call (ms)" in gelu and "wall time" not in gelu
    assert "3.5" in e2e and "wall time (s)" in e2e
