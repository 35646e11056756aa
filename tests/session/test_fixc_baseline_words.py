"""The baseline's advice is runnable as printed, its progress totals agree with its "at
most", and too few runs are called that, not noise (tester: `run 11 of at most 60 ...
(12/15 runs)`, `--runs 20006`, `--runs 2116` refused by the default --max-runs 60)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from test_adaptive_baseline import _measure

from ledger import Ledger
from session.conduct import baseline as b


@pytest.fixture
def ledger(tmp_path: Path):
    with Ledger.open(tmp_path / "ledger.db") as led:
        yield led


def _advice(words: str) -> tuple[int, int] | None:
    found = re.search(r"--runs (\d+)(?: --max-runs (\d+))?", words)
    if found is None:
        return None
    runs = int(found.group(1))
    return runs, int(found.group(2)) if found.group(2) else b.DEFAULT_MAX_RUNS


@pytest.mark.parametrize("sd", [0.0, 0.3, 3.0])
def test_too_few_runs_are_named_and_the_advice_runs_as_printed(ledger, sd):
    rng = random.Random(1)
    got, *_ = _measure(ledger, lambda run: 1.0 + abs(rng.gauss(0, sd)), runs=4, max_runs=4)
    (j,) = got.judgements.values()
    assert j.outcome is b.Outcome.TOO_FEW and j.outcome.warns and not j.outcome.blocks_round
    assert "too few" in j.words() and "noise" not in j.words()
    runs, top = _advice(j.words()) or (0, 0)
    assert 2 <= runs <= top <= 1000, j.words()  # what `gpuopt baseline` accepts


def test_noisy_advice_never_names_an_absurd_run_count(ledger):
    rng = random.Random(2)
    got, *_ = _measure(ledger, lambda run: 1.0 + abs(rng.gauss(0, 0.5)), runs=10, max_runs=12)
    (j,) = got.judgements.values()
    assert j.outcome is b.Outcome.TOO_NOISY
    advice = _advice(j.words())
    assert advice is None or advice[0] <= advice[1] <= 1000, j.words()
    assert "--threshold" in j.words()


def test_progress_totals_agree_with_the_at_most(ledger):
    seen = []
    rng = random.Random(3)
    _measure(
        ledger,
        lambda run: 1.0 + rng.gauss(0, 0.05),
        runs=10,
        max_runs=60,
        progress=seen.append,
    )
    runs = [p for p in seen if "run " in p.message and "warm-up" not in p.message]
    assert len(runs) > 10
    for p in runs:
        assert p.runs_done <= p.runs_total <= 61, (p.message, p.runs_done, p.runs_total)
    minimum = [p for p in runs if "at most" not in p.message]
    assert {p.runs_total for p in minimum} == {11}  # the warm-up and the minimum
    more = [p for p in runs if "at most 60" in p.message]
    assert more and {p.runs_total for p in more} == {61}  # one upper bound: a steady bar
