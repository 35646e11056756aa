"""`gpuopt compare`: hyperfine's first look, interleaved and paired, storing nothing."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from measure.vocabulary import RunStatus, Verdict
from session.conduct import compare as engine
from tui.cli import main


def gpuopt(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _runner(times: dict[str, float], sd: float, seed: int = 1):
    """A scripted runner (no processes): each command's time with Gaussian noise."""
    rng = random.Random(seed)

    def run(command: str, cwd: Path, **kw: object) -> SimpleNamespace:
        value = times[command] * (1 + rng.gauss(0, sd))
        return SimpleNamespace(
            status=RunStatus.OK, value=value, user_s=0.001, sys_s=0.0, exit_code=0, error=""
        )

    return run


def test_a_clear_difference_is_decided_at_the_first_look_with_words():
    got = engine.compare(["a", "b"], run=_runner({"a": 0.10, "b": 0.142}, 0.005), seed=1)
    assert got.blocks == 10 and got.stop_reason == "decided"
    (rel,) = got.relations
    assert rel.verdict is Verdict.SLOWER and rel.ratio == pytest.approx(1.42, rel=0.01)
    words = rel.words("a")
    assert (
        words.startswith("b ran 1.42 ± 0.0") and "× slower than a (99% CI" in words
    )  # the interval that decided
    assert words.endswith("SLOWER")
    faster = engine.compare(["b", "a"], run=_runner({"a": 0.10, "b": 0.142}, 0.005), seed=1)
    assert faster.relations[0].words("b").startswith("a ran 1.42")
    assert "× faster than b" in faster.relations[0].words("b")


def test_an_a_a_pair_is_same_and_the_export_follows_hyperfines_schema():
    got = engine.compare(["a", "b"], run=_runner({"a": 0.1, "b": 0.1}, 0.003), seed=2)
    assert got.relations[0].verdict is Verdict.SAME
    doc = got.hyperfine()
    keys = {
        "command",
        "mean",
        "stddev",
        "median",
        "user",
        "system",
        "min",
        "max",
        "times",
        "exit_codes",
        "parameters",
    }
    assert [set(r) for r in doc["results"]] == [keys, keys]
    assert doc["results"][0]["command"] == "a" and len(doc["results"][0]["times"]) == got.blocks
    (cmp,) = doc["gpuopt"]["comparisons"]
    assert cmp["verdict"] == "SAME" and doc["gpuopt"]["reference"] == "a"
    table = engine.hyperfine_markdown(got)
    assert table.startswith("| Command | Mean [ms] | Min [ms] | Max [ms] | Relative |")
    assert "| `a` |" in table and "reference" in table


def test_compare_runs_real_commands_and_exports(tmp_path, capsys):
    js, md = tmp_path / "r.json", tmp_path / "r.md"
    code, out, err = gpuopt(
        capsys,
        "compare",
        "true",
        "sleep 0.05",
        "--runs",
        "10",
        "--max-runs",
        "10",
        "--export-json",
        str(js),
        "--export-markdown",
        str(md),
    )
    assert code == 0, err
    assert "Benchmark 1: true" in out and "Time (mean ± σ):" in out and "Range (min … max):" in out
    assert "User:" in out and "10 runs" in out
    assert "sleep 0.05 ran" in out and "× slower than true (95% CI" in out and "SLOWER" in out
    doc = json.loads(js.read_text())
    assert [r["command"] for r in doc["results"]] == ["true", "sleep 0.05"]
    assert doc["gpuopt"]["comparisons"][0]["verdict"] == "SLOWER"
    assert "`sleep 0.05`" in md.read_text()


def test_the_same_command_twice_is_an_a_a_look_at_the_noise(capsys):
    code, out, _ = gpuopt(capsys, "compare", "true", "true", "--max-runs", "10")
    assert code == 0 and "true ran" in out and "than true" in out


def test_without_a_shell_the_words_run_as_they_are(capsys):
    code, _out, err = gpuopt(capsys, "compare", "-N", "true", "sleep 0.02", "--max-runs", "10")
    assert code == 0, err


def test_compare_refuses_what_it_cannot_do_in_one_line(capsys, tmp_path):
    for args, words in (
        (["compare", "true"], "at least two commands"),
        (["compare", "true", "false", "--threshold", "7"], "--threshold 7"),
    ):
        code, _out, err = gpuopt(capsys, *args)
        assert code == 2 and words in err and err.count("\n") == 1, (args, err)


def test_a_broken_command_stops_at_its_warm_up(capsys):
    code, _out, err = gpuopt(capsys, "compare", "true", "exit 3")
    assert code == 1 and "exit 3: its warm-up run failed" in err and "broken" in err, err
