"""A candidate file that redefines get_inputs() (tests/torch/cheats/own_inputs.py), end to
end through the command line: `variant add` says so, the round's output says so, and
`dispose --choice keep-default` refuses it until a person accepts it with a reason
(issue 20, build 1). The check itself passes it: it was timed and checked on the
reference's inputs, so what it would run on in production is what a person must accept.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from conftest import run_git
from test_cheats import HERE, reference_part

from ledger import Ledger
from session import conduct as c
from session import models as m
from tui.cli import main

QUICK = {"GPUOPT_TORCH_MIN_TIME": "0", "GPUOPT_TORCH_MIN_SAMPLES": "3", "GPUOPT_TORCH_WARMUP": "1"}


def _gpuopt(ledger: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--ledger", str(ledger), *args])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.slow
def test_a_redefined_get_inputs_is_said_at_add_and_in_the_round_and_refused(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    text = (HERE / "cheats" / "own_inputs.py").read_text()
    repo = make_repo(files={"problems/relu.py": reference_part(text)})
    run_git(repo, "checkout", "-q", "-b", "own")
    (repo / "problems/relu.py").write_text(text)
    run_git(repo, "commit", "-q", "-am", "ModelNew with its own get_inputs")
    run_git(repo, "checkout", "-q", "main")
    path = tmp_path / "ledger.db"
    workload = m.Workload.parse("relu=kernelbench:problems/relu.py")
    workload.env = {**QUICK, "GPUOPT_PRELOAD": "1"}
    with Ledger.open(path) as ledger:
        session = m.Session(title="kb", repo=str(repo), contract=m.Contract(workloads=[workload]))
        ledger.put(session)
        baseline = c.record_baseline(ledger, session, runs=2, max_runs=2, warmup=0)
        baseline.reproducibility = m.Reproducibility.REPRODUCIBLE  # two CPU runs: declared
        ledger.put(baseline)
    said = "relu: own's problems/relu.py redefines get_inputs()"

    code, _, err = _gpuopt(path, "variant", "add", session.id, "--name", "own", "--ref", "own")
    assert code == 0, err
    assert said in err and "keep-default refuses it" in err, err

    code, out, err = _gpuopt(path, "round", session.id, "--min-blocks", "2", "--max-blocks",
                             "2", "--no-telemetry")  # fmt: skip
    assert code == 0, out + err
    flat = " ".join(out.split())
    assert "check relu: passed" in flat or "check own: passed" in flat, out
    assert f"note: {said}" in flat, out

    keep = ("dispose", session.id, "own", "--choice", "keep-default", "--class", "C1",
            "--guard", "always", "--fallback", "the reference")  # fmt: skip
    code, out, err = _gpuopt(path, *keep, "--reason", "fast")
    assert code == 2
    assert "redefines get_inputs() or get_init_inputs() on relu" in " ".join(err.split()), err
    code, out, err = _gpuopt(path, *keep, "--accept-semantics", "--reason",
                             "the smaller inputs are the production shape")  # fmt: skip
    assert "redefines get_inputs()" not in err, err
