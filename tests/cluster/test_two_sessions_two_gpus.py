"""Two sessions of one ledger measured at once on two GPUs of one box (issue 24).

The two-GPU replay (another program holds GPU 1). Each session's contract names its GPU
(one by UUID, one by index); two processes, started together, each measure a round
through the real conductor and runner (their baselines recorded before; each workload
waits for the other's first run). Both rounds finish; each run's GPU UUID is its
session's; the workload of each saw its own CUDA_VISIBLE_DEVICES; each session's
telemetry holds its GPU's samples only.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest
from cluster_setup import gpuopt
from conftest import run_git

from measure.telemetry.replay import load_scenario
from session import gpus
from session import models as m
from session.ledger_access import Ledger

ROOT = Path(__file__).resolve().parents[2]

# One session's measuring process: a round on the replay.
SCRIPT = """
import sys
from session import conduct
from session.ledger_access import Ledger
from session.telemetry_access import make_monitor

ledger, sid = sys.argv[1:3]
with Ledger.open(ledger) as led:
    session = led.resolve_session(sid)
    monitor = make_monitor(led.insert_samples, session.id, scenario="two-gpus",
                           gpu_choice=session.contract.gpu)
    try:
        rnd = conduct.run_round(led, session, min_blocks=4, max_blocks=6, seed=1,
                                monitor=monitor)
    finally:
        monitor.close()
    print(rnd.id, rnd.status.value, flush=True)
"""


def _session(ledger: Path, repo: Path, gpu: str, seen: Path, me: str, other: str) -> str:
    """A session on `gpu` whose workload, once the rounds go (the file `go`), says it runs
    (`me`) and waits for the other session's to run too: the two rounds overlap for sure."""
    go, me_at, other_at = seen.with_name("go"), seen.with_name(me), seen.with_name(other)
    meet = (f"if [ -e {go} ]; then touch {me_at}; until [ -e {other_at} ]; do sleep 0.01; "
            "done; fi; ")  # fmt: skip
    out = StringIO()
    with redirect_stdout(out):
        assert gpuopt(ledger, "new", "--repo", str(repo), "--title", f"on {gpu[:8]}",
                      "--gpu", gpu,
                      "--workload", f'w={meet}echo "$CUDA_VISIBLE_DEVICES" >> {seen}; sleep 0.02; '
                      "cat value.txt",
                      "--metric", "regex:(?P<value>[0-9.]+)") == 0  # fmt: skip
    sid = out.getvalue().strip()
    with redirect_stdout(StringIO()):
        assert gpuopt(ledger, "baseline", sid, "--runs", "4", "--no-telemetry") == 0
    seen.unlink()
    (repo / "value.txt").write_text("1.00\n# same\n")
    patch = seen.with_suffix(".diff")
    patch.write_text(run_git(repo, "diff"))
    run_git(repo, "checkout", "-q", "--", ".")
    with redirect_stdout(StringIO()):
        assert gpuopt(ledger, "variant", "add", sid, "--name", "same", "--patch", str(patch)) == 0
    return sid


@pytest.mark.slow
def test_two_sessions_at_once_on_two_gpus_keep_their_own_gpu_and_telemetry(
    make_repo, tmp_path: Path
) -> None:
    uuids = [d["uuid"] for d in load_scenario("two-gpus")["devices"]]
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "l.db"
    choices = {"a": uuids[0], "b": "1"}  # one by UUID, one by index
    sids = {
        k: _session(ledger, repo, g, tmp_path / f"seen-{k}", f"runs-{k}", f"runs-{o}")
        for (k, g), o in zip(choices.items(), "ba", strict=True)
    }
    (tmp_path / "go").write_text("")
    script = tmp_path / "one_session.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUOPT_WORKTREES": str(tmp_path / "wt")}
    procs = {
        k: subprocess.Popen(
            [sys.executable, str(script), str(ledger), sids[k]],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in sids
    }
    said = {}
    for k, p in procs.items():
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        said[k] = out.split()
    assert {s[1] for s in said.values()} == {"completed"}  # both rounds finished

    with Ledger.open(ledger, readonly=True) as led:
        rounds = {k: led.get(m.Round, said[k][0]) for k in sids}
        for k, sid in sids.items():
            index = "0" if k == "a" else "1"
            runs = led.list(m.Run, round_id=said[k][0])
            assert runs and {gpus.gpu_of(r) for r in runs} == {uuids[int(index)]}
            assert {r.place["gpu_index"] for r in runs} == {index}
            trust = {r.trust.value for r in runs if not r.warmup}
            assert trust == ({"clean"} if k == "a" else {"warn"})  # the foreign process: GPU 1
            samples = [s for s in led.samples(session_id=sid) if s.source == "replay"]
            assert samples and {s.gpu for s in samples} == {int(index)}
            seen = set((tmp_path / f"seen-{k}").read_text().split())
            assert seen == {choices[k]}  # the workload got its own GPU
    a, b = rounds["a"], rounds["b"]
    assert a is not None and b is not None and a.started_at and b.started_at
    assert a.ended_at and b.ended_at
    assert a.started_at < b.ended_at and b.started_at < a.ended_at  # they ran at once
