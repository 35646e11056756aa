"""`gpuopt new --env NAME=KEY=VALUE` (repeatable) sets a variable on one workload's
environment; a malformed spec or an unknown workload is one line and exit 2."""

from __future__ import annotations

from test_new_validation import new, one_line

from ledger import Ledger
from session import models as m


def test_env_is_set_on_the_named_workload(make_repo, tmp_path):
    repo = make_repo()
    ledger = tmp_path / "l.db"
    ok = new(tmp_path, ledger, repo, "--workload", "v=false",
             "--env", "w=MALLOC_TRIM_THRESHOLD_=68719476736",
             "--env", "w=A=b=c", "--env", "v=GPUOPT_TORCH_STAT=min")  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    with Ledger.open(ledger) as lg:
        session = lg.get(m.Session, ok.stdout.strip())
    assert session is not None
    envs = {w.name: w.env for w in session.contract.workloads}
    assert envs["w"] == {"MALLOC_TRIM_THRESHOLD_": "68719476736", "A": "b=c"}
    assert envs["v"] == {"GPUOPT_TORCH_STAT": "min"}


def test_bad_env_specs_are_one_line_errors(make_repo, tmp_path):
    repo = make_repo()
    ledger = tmp_path / "l.db"
    line = one_line(new(tmp_path, ledger, repo, "--env", "w=NOVALUE"))
    assert line.startswith("gpuopt: --env must be NAME=KEY=VALUE")
    line = one_line(new(tmp_path, ledger, repo, "--env", "nosuch=A=1"))
    assert "no workload 'nosuch'" in line and "workloads: w" in line
    assert not ledger.exists()
