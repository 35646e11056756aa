"""Telemetry that follows the contract's GPU (by index or UUID), on the two-GPU replay."""

from __future__ import annotations

import pytest
from test_replay import drive

from measure.telemetry import make_monitor
from measure.telemetry.replay import load_scenario

UUIDS = [d["uuid"] for d in load_scenario("two-gpus")["devices"]]


def _drive_on(choice: str | None, runs: int = 2) -> tuple[object, list[object]]:
    monitor = make_monitor(None, "sess", scenario="two-gpus", start=False, gpu_choice=choice)
    obs = []
    monitor.tick()
    for n in range(1, runs + 1):
        monitor.run_started(f"run{n}", None)
        monitor.tick()
        obs.append(monitor.run_finished(f"run{n}"))
    samples = monitor.tick()
    monitor.close()
    return (monitor, samples), obs


def test_the_whole_box_sees_the_other_program_on_gpu_1() -> None:
    _, obs = drive("two-gpus", 1)
    assert obs[0].trust == "warn" and "pid 4194302" in obs[0].reasons[0]


@pytest.mark.parametrize("choice", ["0", UUIDS[0], UUIDS[0][:12]])
def test_a_session_on_the_free_gpu_is_clean_and_sees_only_it(choice: str) -> None:
    (monitor, samples), obs = _drive_on(choice)
    assert [o.trust for o in obs] == ["clean", "clean"], [o.reasons for o in obs]
    assert [d.uuid for d in monitor.devices] == [UUIDS[0]]
    assert {s.gpu for s in samples if s.source != "host"} == {0}
    assert set(obs[0].deltas["gpus"]) == {"0"}


@pytest.mark.parametrize("choice", ["1", UUIDS[1]])
def test_a_foreign_process_on_the_chosen_gpu_is_flagged_per_run(choice: str) -> None:
    _, obs = _drive_on(choice)
    assert [o.trust for o in obs] == ["warn", "warn"]
    assert all(o.reasons[0].startswith("another process on the GPU: pid 4194302") for o in obs)
    assert obs[0].deltas["gpus"]["1"]["uuid"] == UUIDS[1]


def test_a_gpu_the_box_lacks_says_so_and_leaves_trust_unknown() -> None:
    (monitor, _), obs = _drive_on("7")
    assert "no single GPU 7 here" in monitor.status and UUIDS[1] in monitor.status
    assert obs[0].trust == "unknown"
