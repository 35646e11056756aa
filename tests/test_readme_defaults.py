"""The README's numbers are the code's: the defaults it states (runs, blocks, looks, band)
are read out of its text and held to the constants and the command line's defaults, so a
change to either fails here until the other follows (issue 22: it described another demo)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from measure.sequential import Design
from session import conduct
from session import models as m
from session.demo_flow import VARIANTS
from tui.cli import build_parser
from tui.demo.flow import demo_contract

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
ROUND = inspect.signature(conduct.run_round).parameters
MIN_BLOCKS, MAX_BLOCKS = ROUND["min_blocks"].default, ROUND["max_blocks"].default
BAND = m.Contract.model_fields["threshold"].default


def _one(pattern: str) -> tuple[str, ...]:
    found = re.findall(pattern, " ".join(README.split()))  # lines joined: one paragraph
    assert len(found) == 1, (pattern, found)
    return found[0] if isinstance(found[0], tuple) else (found[0],)


def _pct(text: str) -> float:
    return float(text) / 100


def test_the_quick_start_states_the_demos_real_defaults() -> None:
    runs = _one(r"a baseline of (\d+) to (\d+) runs")
    assert tuple(map(int, runs)) == (conduct.DEFAULT_RUNS, conduct.DEFAULT_MAX_RUNS)
    low, high, arms = _one(r"a round of (\d+) to (\d+) blocks of (\w+) arms")
    assert (int(low), int(high)) == (MIN_BLOCKS, MAX_BLOCKS)
    assert arms == {2: "two", 3: "three", 4: "four", 5: "five"}[len(VARIANTS) + 1]
    (band,) = _one(r"the band is the contract's ±(\d+(?:\.\d+)?)%")
    assert _pct(band) == BAND == demo_contract("kernelbench").threshold
    # the median, as every session: the demo sets no other statistic
    assert "median time per call" in " ".join(README.split())
    env = demo_contract("kernelbench").workloads[0].env
    assert env.get("GPUOPT_TORCH_STAT", "median") == "median"
    assert "fastest call and uses a" not in README


def test_the_verdict_section_states_the_commands_defaults() -> None:
    args = build_parser().parse_args(["baseline", "S"])
    (runs,) = _one(r"`--runs` \((\d+)\) is a minimum")
    assert int(runs) == args.runs == conduct.DEFAULT_RUNS
    (most,) = _one(r"up to `--max-runs` \((\d+)\)")
    assert int(most) == conduct.DEFAULT_MAX_RUNS
    (band,) = _one(r"the contract's, ±(\d+(?:\.\d+)?)% unless set")
    assert _pct(band) == BAND
    (looks,) = _one(r"planned looks\*\* \(blocks ([\d, ]+) by default\)")
    assert tuple(int(x) for x in looks.split(", ")) == Design.plan(MIN_BLOCKS, MAX_BLOCKS).looks
    rnd = build_parser().parse_args(["round", "S"])
    assert (rnd.min_blocks, rnd.max_blocks) == (MIN_BLOCKS, MAX_BLOCKS)


def test_the_command_table_states_the_same_limits() -> None:
    (max_runs,) = _one(r"`gpuopt baseline SESSION \[--runs N\] \[--max-runs (\d+)\]")
    assert int(max_runs) == conduct.DEFAULT_MAX_RUNS
    (max_blocks,) = _one(r"`gpuopt round SESSION \[--variants A,B\] \[--max-blocks (\d+)\]")
    assert int(max_blocks) == MAX_BLOCKS
