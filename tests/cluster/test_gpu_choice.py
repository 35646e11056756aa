"""A box's GPU chosen by UUID or index: the workload gets it, runs say it, and figures of
different GPUs are not paired unless asked for (issue 24)."""

from __future__ import annotations

import json
from contextlib import redirect_stdout
from io import StringIO

import pytest
from cluster_setup import gpuopt, query

from session import gpus
from session import models as m
from tui.cli import main


def test_the_workload_gets_the_contracts_gpu_and_each_run_records_it(make_repo, tmp_path) -> None:
    repo = make_repo()
    ledger = tmp_path / "l.db"
    out = StringIO()
    with redirect_stdout(out):
        assert gpuopt(ledger, "new", "--repo", str(repo), "--title", "on gpu 3", "--gpu", "3",
                      "--workload", "w=echo seen $CUDA_VISIBLE_DEVICES",
                      "--metric", "regex:seen (?P<value>[0-9]+)",
                      "--slurm-partition", "gpu", "--slurm-gres", "gpu:1") == 0  # fmt: skip
    sid = out.getvalue().strip()
    with redirect_stdout(StringIO()):
        assert gpuopt(ledger, "baseline", sid, "--runs", "3", "--no-telemetry") == 0
    (data,) = query(ledger, "SELECT data FROM sessions")[0]
    contract = json.loads(data)["contract"]
    assert contract["gpu"] == "3"
    assert contract["slurm"]["partition"] == "gpu" and contract["slurm"]["gres"] == "gpu:1"
    ref = json.loads(query(ledger, "SELECT data FROM baselines")[0][0])["reference"]
    assert ref == {"w": 3.0}  # the workload saw CUDA_VISIBLE_DEVICES=3
    places = {r[0] for r in query(ledger, "SELECT json_extract(data, '$.place.gpu') FROM runs")}
    assert places == {"3"}


def test_an_unset_gpu_leaves_the_contract_hash_as_it_was() -> None:
    contract = m.Contract(workloads=[m.Workload(name="w", command="true")])
    plain = contract.model_dump_json(exclude={"slurm", "gpu"})
    import hashlib

    assert contract.stable_hash() == hashlib.sha256(plain.encode()).hexdigest()[:16]
    queued = contract.model_copy(update={"slurm": m.SlurmSettings(partition="p")})
    assert queued.stable_hash() == contract.stable_hash()  # where it queues is not measured
    assert contract.model_copy(update={"gpu": "1"}).stable_hash() != contract.stable_hash()


def test_compare_refuses_to_pair_commands_on_different_gpus(capsys) -> None:
    code = main(["compare", "--gpus", "0,1", "true", "true"])
    err = capsys.readouterr().err
    assert code == 2 and "not paired across GPUs unless --across-gpus" in err
    with pytest.raises(Exception, match="names 3 GPUs for 2 commands"):
        gpus.gpu_commands(["a", "b"], ["0", "1", "2"], across=True)
    assert gpus.gpu_commands(["a", "b"], ["GPU-x"], across=False) == [
        "export CUDA_VISIBLE_DEVICES=GPU-x; a", "export CUDA_VISIBLE_DEVICES=GPU-x; b"]  # fmt: skip


@pytest.mark.slow
def test_an_aa_check_across_two_gpus_says_whether_they_are_interchangeable(capsys) -> None:
    # Two "GPUs" a command can tell apart by CUDA_VISIBLE_DEVICES: 1 is five times slower.
    slow_on_1 = 'if [ "$CUDA_VISIBLE_DEVICES" = 1 ]; then sleep 0.05; else sleep 0.01; fi'
    code = main(["compare", "--gpus", "0,1", "--across-gpus", "-r", "10", "--max-runs", "10",
                 slow_on_1])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "GPUs 0 and 1 are NOT interchangeable" in out
    code = main(["compare", "--gpus", "0,1", "--across-gpus", "-r", "10", "--max-runs", "10",
                 "--threshold", "30%", "sleep 0.05"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "GPUs 0 and 1 are interchangeable at ±30.0%" in out


def _run(gpu_uuid: str | None) -> m.Run:
    place = {"gpu_uuid": gpu_uuid} if gpu_uuid else {}
    return m.Run(session_id="s", arm="baseline", workload="w", place=place)


def test_a_round_on_another_gpu_is_not_held_to_the_baselines_reference() -> None:
    same = gpus.baseline_gpu_mismatch([_run("GPU-a")], [_run("GPU-a")])
    assert same is None
    assert gpus.baseline_gpu_mismatch([_run(None)], [_run("GPU-b")]) is None  # nothing known
    said = gpus.baseline_gpu_mismatch([_run("GPU-a")], [_run("GPU-b"), _run("GPU-b")])
    assert said is not None and "reference ran on GPU GPU-a, this round on GPU-b" in said


def test_the_contract_pane_says_where_the_session_measures() -> None:
    from tui.screens.steps.contract import contract_table

    contract = m.Contract(workloads=[m.Workload(name="w", command="true")], gpu="GPU-5e1f",
                          slurm=m.SlurmSettings(partition="gpu", gres="gpu:1",
                                                extra=["--exclusive"]))  # fmt: skip
    table = contract_table(m.Session(title="t", repo="/r", contract=contract))
    labels = [str(c) for c in table.columns[0]._cells]
    texts = [str(c) for c in table.columns[1]._cells]
    assert "GPU" in labels and "GPU-5e1f (the workloads see it alone)" in texts
    assert "partition gpu · gres gpu:1 · --exclusive" in texts
    bare = contract_table(m.Session(title="t", repo="/r", contract=contract.model_copy(
        update={"gpu": None, "slurm": None})))  # fmt: skip
    assert "Slurm" not in [str(c) for c in bare.columns[0]._cells]


@pytest.mark.slow
def test_runs_on_the_chosen_gpu_of_two_say_its_uuid_and_its_foreign_process(
    make_repo, tmp_path
) -> None:
    # The two-GPU replay: another program holds GPU 1. A session on GPU 1 is warned per
    # run and records GPU 1's UUID; one on GPU 0 is clean. Through the real conductor.
    from measure.telemetry.replay import load_scenario
    from session import conduct
    from session.ledger_access import Ledger
    from session.telemetry_access import make_monitor

    uuids = [d["uuid"] for d in load_scenario("two-gpus")["devices"]]
    repo = make_repo()
    for choice, trust in (("1", "warn"), (uuids[0], "clean")):
        with Ledger.open(tmp_path / f"l{choice[:4]}.db") as led:
            session = m.Session(title="t", repo=str(repo), contract=m.Contract(
                workloads=[m.Workload(name="w", command="true")], gpu=choice))  # fmt: skip
            led.put(session)
            monitor = make_monitor(led.insert_samples, session.id, scenario="two-gpus",
                                   gpu_choice=choice)  # fmt: skip
            try:
                base = conduct.record_baseline(led, session, runs=3, max_runs=3,
                                               monitor=monitor)  # fmt: skip
            finally:
                monitor.close()
            runs = [r for r in led.list(m.Run, baseline_id=base.id) if not r.warmup]
        assert {r.trust.value for r in runs} == {trust}, [r.trust_reasons for r in runs]
        index = "1" if choice == "1" else "0"
        assert {gpus.gpu_of(r) for r in runs} == {uuids[int(index)]}
        assert {r.place["gpu_index"] for r in runs} == {index}
        if trust == "warn":
            assert all("pid 4194302" in r.trust_reasons[0] for r in runs)
