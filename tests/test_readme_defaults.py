"""The README's numbers are the code's: the defaults it states (runs, blocks, looks, band)
are read out of its text and held to the constants and the command line's defaults, so a
change to either fails here until the other follows (issue 22: it described another demo).
The figures it measured (the demo's time, the suite's size and time) are held to the
benchmark results recorded in docs/measured.json."""

from __future__ import annotations

import inspect
import json
import re
import time
from pathlib import Path
from typing import Any

from measure.sequential import Design
from session import conduct
from session import models as m
from session.demo_flow import VARIANTS
from tui.cli import build_parser
from tui.commands import bisect as bisect_cmd
from tui.demo.flow import demo_contract

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
ROUND = inspect.signature(conduct.run_round).parameters
MIN_BLOCKS, MAX_BLOCKS = ROUND["min_blocks"].default, ROUND["max_blocks"].default
BAND = m.Contract.model_fields["threshold"].default
WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


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
    assert arms == WORDS[len(VARIANTS) + 1]
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


def test_the_bisect_section_states_its_defaults() -> None:
    args = build_parser().parse_args(["bisect", "--good", "a", "--bad", "b", "--", "true"])
    (band,) = _one(r"\(`--threshold`, the contract's, else ±(\d+(?:\.\d+)?)%\)")
    assert _pct(band) == float(bisect_cmd.DEFAULT_THRESHOLD)
    (most,) = _one(r"takes more blocks up to `--max-blocks` \((\d+)\)")
    assert int(most) == args.max_blocks


def test_the_looks_and_their_confidence_are_the_designs() -> None:
    design = Design.plan(MIN_BLOCKS, MAX_BLOCKS)
    n_looks = len(design.looks)
    err, per_look, count = _one(
        r"error rate at (\d+)% however often it looks \((\d+(?:\.\d+)?)% per look for (\w+) looks\)"
    )
    assert _pct(err) == design.alpha
    assert float(per_look) == round(design.confidence * 100, 1)
    assert count == WORDS[n_looks]
    (wide,) = _one(r"\(1% spent over the looks: (\d+(?:\.\d+)?)%\)")
    assert float(wide) == round(design.change_confidence * 100, 1)
    (blocks,) = _one(r"the band a (\d+)-block round resolves at that noise")
    assert int(blocks) == MAX_BLOCKS


def test_the_cheat_count_is_the_shipped_set() -> None:
    caught, total = _one(r"runs in CI: (\d+) of (\d+) are caught, 0 pass")
    shipped = [p for p in (ROOT / "tests/torch/cheats").glob("*.py") if p.name != "__init__.py"]
    assert int(caught) == int(total) == len(shipped)


# Measured figures: each is held to the benchmark result that docs/measured.json records
# (rerun before a release: `python -m tests.benchmarks.demo_time --record` and
# `python -m tests.benchmarks.suite_time --record`), so a number no run backs fails here.
RERUN = "rerun the benchmark with --record and copy its figures into the README"


def _measured(key: str) -> dict[str, Any]:
    measured = json.loads((ROOT / "docs/measured.json").read_text(encoding="utf-8"))
    assert key in measured, f"docs/measured.json has no {key!r}: {RERUN}"
    return dict(measured[key])


def _range(text: str) -> tuple[float, float]:
    low, _, high = text.partition("–")
    return float(low), float(high or low)


def test_the_demo_time_is_the_recorded_benchmarks() -> None:
    demo = _measured("demo")
    walls, cpus, loads, when = _one(
        r"measures it into `docs/measured.json` \(([\d–]+) s and \d+(?:–\d+)? processes "
        r"on a (\d+)-vCPU VM at a load of ([\d.–]+), (\w+ \d{4})\)"
    )
    runs = demo["runs"]
    assert runs and all(r["exit"] == 0 for r in runs), f"a recorded demo failed: {RERUN}"
    wall = [round(r["wall_s"]) for r in runs]
    assert _range(walls) == (min(wall), max(wall)), (walls, wall, RERUN)
    (procs,) = _one(r"s and (\d+(?:–\d+)?) processes on a")
    n = [r["processes"] for r in runs]
    assert _range(procs) == (min(n), max(n)), (procs, n, RERUN)
    assert int(cpus) == demo["cpus"]
    load = [x for r in runs for x in (r["load_before"], r["load_after"])]
    assert _range(loads) == (round(min(load)), round(max(load))), (loads, load, RERUN)
    assert when == time.strftime("%B %Y", time.strptime(demo["date"], "%Y-%m-%d"))


def test_the_suites_size_and_time_are_the_recorded_runs() -> None:
    suite = _measured("suite")
    workers, tests, wall, cpus = _one(
        r"python -m pytest -n (\d+) +# the whole suite \(([\d,]+) tests: (\d+) s on (\d+) cores"
    )
    assert int(tests.replace(",", "")) == suite["tests"], (tests, suite["tests"], RERUN)
    assert int(wall) == suite["wall_s"], (wall, suite["wall_s"], RERUN)
    assert (int(cpus), int(workers)) == (suite["cpus"], suite["workers"])
    assert suite.get("failed", 0) == 0 and suite["exit"] == 0, f"the recorded suite failed: {RERUN}"
    # the CPU time beside the wall time: what says how far a wall time is from its floor
    (cpu_s,) = _one(r"# the whole suite \([^)]*? s on \d+ cores at rest, ([\d,]+) CPU-seconds")
    assert int(cpu_s.replace(",", "")) == suite["cpu_s"], (cpu_s, suite.get("cpu_s"), RERUN)


def test_the_keys_the_app_section_names_are_bound() -> None:
    from textual.binding import Binding

    from tui.screens.steps.baseline import BaselinePane
    from tui.screens.steps.round import RoundPane

    def bound(pane: type[BaselinePane] | type[RoundPane]) -> dict[str, str]:
        return {b.key: b.action for b in pane.BINDINGS if isinstance(b, Binding)}

    text = " ".join(README.split())
    assert "`r` records the baseline or runs the round" in text
    assert bound(BaselinePane)["r"] == "record" and bound(RoundPane)["r"] == "run"
    assert "`s` stops it cleanly" in text and bound(RoundPane)["s"] == "stop"
    assert "`f` (Round) fills in the band a too-noisy baseline supports" in text
    assert bound(RoundPane)["f"] == "advised_threshold"
    assert "`g` (Round) records the baseline again and re-runs the round" in text
    assert bound(RoundPane)["g"] == "rebaseline"


def test_the_torch_notes_state_the_same_limits() -> None:
    notes = (ROOT / "docs/torch_workloads.md").read_text(encoding="utf-8")
    found = re.findall(
        r"a baseline of (\d+) to (\d+) runs and a round of up to (\d+) blocks of (\w+) arms",
        " ".join(notes.split()),
    )
    assert found == [
        (str(conduct.DEFAULT_RUNS), str(conduct.DEFAULT_MAX_RUNS), str(MAX_BLOCKS),
         WORDS[len(VARIANTS) + 1])
    ]  # fmt: skip
