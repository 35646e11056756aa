"""The timed replicate itself is out of the candidate's reach: fresh inputs per call from
the reference's file, a sample of timed calls re-checked against the reference, patched
timers and side threads refused (the round points the worker at the baseline's checkout)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cheats import HERE, reference_part

from measure import harness
from session import torch_inputs

QUICK = {"GPUOPT_TORCH_MIN_SAMPLES": "5", "GPUOPT_TORCH_MIN_TIME": "0", "GPUOPT_TORCH_WARMUP": "1",
         "GPUOPT_TORCH_WARMUP_MAX": "3"}  # fmt: skip


def _timed(tmp_path: Path, cheat: str, *, reference: bool = True) -> harness.WorkerResult:
    text = (HERE / "cheats" / f"{cheat}.py").read_text()
    base, new = tmp_path / "base", tmp_path / "new"
    for root, body in ((base, reference_part(text)), (new, text)):
        (root / "problems").mkdir(parents=True)
        (root / "problems" / "p.py").write_text(body)
    command, _, _ = harness.workload_command("kernelbench", "problems/p.py")
    env = dict(QUICK)
    if reference:
        env[harness.REFERENCE_ROOT_ENV] = str(base)
    return harness.run_worker(command, new, env=env, timeout_s=300)


@pytest.mark.slow
def test_a_cached_result_is_timed_on_fresh_inputs_and_re_checked(tmp_path: Path) -> None:
    r = _timed(tmp_path, "cached_output")
    assert r.ok, r.output_tail
    assert r.data["inputs"] == "fresh per call from the reference's get_inputs()"
    assert r.data["rechecked_calls"] == 3
    assert r.data["source"].endswith(":ModelNew")


@pytest.mark.slow
def test_its_own_get_inputs_are_not_what_is_timed(tmp_path: Path) -> None:
    r = _timed(tmp_path, "own_inputs")
    assert r.ok, r.output_tail
    assert "redefines get_inputs()" in " ".join(r.data["warnings"])
    alone = _timed(tmp_path / "alone", "own_inputs", reference=False)
    assert alone.data["inputs"].endswith("(no reference given)")


@pytest.mark.parametrize(
    ("cheat", "words"),
    [
        ("timer_patch", "replaced time.perf_counter"),
        ("cuda_timer_patch", "replaced torch.cuda.synchronize"),
        ("side_thread", "side thread"),
        ("empty_output", "timed-loop re-check: call"),
        ("freed_memory", "timed-loop re-check: call"),
        ("input_view", "a view of input 0"),
    ],
)
@pytest.mark.slow
def test_a_timed_cheat_is_refused_in_words(tmp_path: Path, cheat: str, words: str) -> None:
    r = _timed(tmp_path, cheat)
    assert not r.ok
    assert words in r.error, r.error


def test_a_redefined_get_inputs_is_found_from_the_two_sources() -> None:
    text = (HERE / "cheats" / "own_inputs.py").read_text()
    assert torch_inputs.redefined(reference_part(text), text) == ["get_inputs"]
    same = (HERE / "cheats" / "cached_output.py").read_text()
    assert torch_inputs.redefined(reference_part(same), same) == []


DEGENERATE = """
import torch
from torch import nn
class Model(nn.Module):
    def forward(self, x):
        return (x * 0.0 + 2.0, torch.arange(x.numel(), dtype=x.dtype).reshape(x.shape))
def get_inputs():
    return [torch.randn(8, 8)]
def get_init_inputs():
    return []
"""


@pytest.mark.slow
def test_a_degenerate_reference_is_warned_of(tmp_path: Path) -> None:
    (tmp_path / "d.py").write_text(DEGENERATE)
    common = {"mode": "outputs", "kind": "kernelbench", "spec": "d.py", "trials": 2, "seed": 3}
    (ref,) = harness.run_jobs([{**common, "name": "ref", "save": str(tmp_path / "ref")}], tmp_path)
    assert ref.ok, ref.output_tail
    job = {**common, "name": "new", "save": str(tmp_path / "new"),
           "compare_to": str(tmp_path / "ref"), "inputs_from": str(tmp_path / "d.py")}  # fmt: skip
    (new,) = harness.run_jobs([job], tmp_path)
    assert new.ok and new.data["passed"], new.output_tail
    words = " ".join(new.data["warnings"])
    assert "output out[0] is nearly constant: a check on it proves little" in words
    assert "output out[1] does not change with the seed" in words


FACTORY = """
import os
import torch

def bench(device, seed):
    # The factory's fn keeps a log of what it was called on, and caches by input object
    # (the cheat a factory's one set of inputs would let through).
    cache = {}
    log = open(os.environ["CALL_LOG"], "a")

    def fn(x):
        log.write(f"{id(x)} {x.data_ptr()} {float(x.sum())!r}\\n")
        log.flush()
        if id(x) not in cache:
            cache[id(x)] = x.exp()
        return cache[id(x)]

    g = torch.Generator().manual_seed(seed)
    return {"fn": fn, "inputs": [torch.randn(4096, generator=g)]}
"""


@pytest.mark.slow
def test_a_torch_factory_is_timed_on_fresh_inputs_too(tmp_path: Path) -> None:
    """A `torch:MODULE:CALLABLE` workload gets a new input set per timed call, as the
    get_inputs path does: the factory is called again (another seed) outside the timer."""
    (tmp_path / "fac.py").write_text(FACTORY)
    log = tmp_path / "calls.log"
    command, _, _ = harness.workload_command("torch", "fac:bench")
    r = harness.run_worker(command, tmp_path, env={**QUICK, "CALL_LOG": str(log)}, timeout_s=300)
    assert r.ok, r.output_tail
    assert r.data["inputs"] == "fresh per call from the factory (called again with a new seed)"
    calls = [line.split() for line in log.read_text().splitlines()]
    assert len(calls) >= r.data["samples"] >= 5
    # no call saw an object or a content that an earlier call saw
    assert len({c[2] for c in calls}) == len(calls), calls
    assert len({c[0] for c in calls}) == len(calls) or len({c[1] for c in calls}) == len(calls)
