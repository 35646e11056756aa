"""The adaptive baseline: runs until its split-half check is decided, three outcomes in
words, a broken workload stopped at once, and only a drift the telemetry names a cause
for blocks a round (drift with no named cause warns: the round goes on, paired). Driven by a
scripted executor (no processes); the ledger is real."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from test_conduct_scripted import FAIL, ScriptedExecutor, records

from ledger import Ledger
from session import conduct as c
from session import models as m
from session.conduct import baseline as b
from session.conduct.round import baseline_noise_notes


@pytest.fixture
def ledger(tmp_path: Path):
    with Ledger.open(tmp_path / "ledger.db") as led:
        yield led


def _measure(ledger, script, **kw):
    session, baseline, _ = records(ledger, variants=0)
    ex = ScriptedExecutor(ledger, script)

    def make_run(name: str, index: int, warm: bool) -> m.Run:
        return m.Run(
            session_id=session.id,
            baseline_id=baseline.id,
            arm="baseline",
            workload=name,
            block=index,
            warmup=warm,
        )

    opts = {"runs": 10, "warmup": 1, "max_runs": 60, "threshold": 0.02, **kw}
    got = b.measure(ex, make_run, Path("/nonexistent"), ["w"], **opts)
    return got, ex, session, baseline


def _gauss(sd: float, seed: int, drift: float = 0.0):
    rng = random.Random(seed)
    n = [0]

    def script(run: m.Run) -> float:
        n[0] += 1
        return (1.0 + drift * n[0]) * (1.0 + rng.gauss(0, sd))

    return script


def test_steady_values_are_reproducible_at_the_first_look(ledger):
    got, ex, _, _ = _measure(ledger, lambda run: 0.1)
    (j,) = got.judgements.values()
    assert j.outcome is b.Outcome.REPRODUCIBLE and j.runs == 10
    assert len(ex.runs) == 11  # one warm-up, the minimum: nothing more was needed
    assert "halves SAME within ±2%" in j.words()


def test_runs_is_a_minimum_the_baseline_goes_on_until_decided(ledger):
    got, *_ = _measure(ledger, _gauss(0.01, 4))  # CV 1%: 10 runs cannot fit ±2% at 99%
    (j,) = got.judgements.values()
    assert j.outcome is b.Outcome.REPRODUCIBLE, j.words()
    assert 10 < j.runs <= 60 and j.runs in b.looks(10, 60)


def test_a_drifting_workload_is_named_with_its_ratio_and_the_slower_half(ledger):
    got, *_ = _measure(ledger, _gauss(0.002, 1, drift=0.01))  # 1% slower per run
    (j,) = got.judgements.values()
    assert j.outcome is b.Outcome.DRIFTING and j.runs <= 14  # clear at an early look
    words = j.words()
    assert "drifting" in words and "second half / first 1.0" in words
    assert "the later half was slower" in words and "a round goes on" in words
    assert "absolute figures are unreliable" in words and not j.outcome.blocks_round


def _clocks_moving(script):
    def run(r: m.Run) -> float:
        r.trust_reasons = ["SM clock spread 12% across busy samples (1400–1980 MHz)"]
        return script(r)

    return run


def test_a_drift_the_telemetry_names_a_cause_for_blocks_with_its_repair(ledger):
    got, *_ = _measure(ledger, _clocks_moving(_gauss(0.002, 1, drift=0.01)))
    (j,) = got.judgements.values()
    assert j.outcome is b.Outcome.DRIFT_CAUSED and j.outcome.blocks_round
    words = j.words()
    assert "clocks changing (SM clock spread 12%" in words
    assert "lock-gpu-clocks" in words and "record the baseline again" in words


def test_the_band_a_too_noisy_baseline_advises_is_one_a_round_resolves(ledger):
    """Slow spells (a run falls 40% slower for a stretch) widen the unpaired halves'
    interval far past what a paired round sees; the advice comes from the short-term noise
    a round's blocks have, so it is a band a default round can resolve."""
    rng = random.Random(5)
    spells = [1.4 if 6 <= k % 20 < 12 else 1.0 for k in range(200)]
    k = [0]

    def script(run: m.Run) -> float:
        k[0] += 1
        return spells[k[0]] * (1 + rng.gauss(0, 0.01))

    got, *_ = _measure(ledger, script, max_runs=20)
    (j,) = got.judgements.values()
    assert j.outcome is not None and j.outcome.warns, j.words()
    assert j.narrowest is not None and j.narrowest > 0.15  # what the halves would need
    assert j.resolvable is not None and j.advised_band() < j.narrowest / 2, j.words()


def test_too_noisy_says_the_noise_the_narrowest_band_and_the_options(ledger):
    got, *_ = _measure(ledger, _gauss(0.10, 2), max_runs=20)
    (j,) = got.judgements.values()
    assert j.outcome is b.Outcome.TOO_NOISY and j.runs == 20
    words = j.words()
    assert "too noisy for ±2% after 20 runs" in words
    assert "CV " in words and "MAD " in words
    assert "a round of 30 blocks resolves ±" in words
    # a new user saw this beside a round's "smallest effect … 19.6%": each says its source
    assert "from the baseline's run-to-run noise" in words, words
    for option in ("--threshold", "more runs", "prepare command", "taskset"):
        assert option in words


def test_a_failing_warm_up_stops_at_once_as_broken_never_as_noise(ledger):
    with pytest.raises(c.WorkloadBroken) as e:
        _measure(ledger, lambda run: FAIL)
    text = str(e.value)
    assert "w: its warm-up run failed (exit 2)" in text and "broken, not noisy" in text
    assert "can't open file 'nonexistent.py'" in text  # the stderr tail
    assert len(ledger.list(m.Run)) == 1  # nothing after the warm-up


def test_without_warm_up_the_first_run_failing_is_broken(ledger):
    with pytest.raises(c.WorkloadBroken, match="its first run failed"):
        _measure(ledger, lambda run: FAIL, warmup=0)
    assert len(ledger.list(m.Run)) == 1


def test_the_budget_ends_the_runs_with_a_verdict(ledger):
    got, *_ = _measure(ledger, _gauss(0.10, 3), budget_s=1e-9)
    (j,) = got.judgements.values()
    assert j.runs == 10 and j.outcome is b.Outcome.TOO_NOISY  # no time for another look


def test_looks_are_few_and_end_at_the_maximum():
    assert b.looks(10, 60) == [10, 14, 18, 24, 30, 38, 48, 60]
    assert b.looks(4, 4) == [4]


# ------------------------------------------------------------------------------ the gate


def _stored(ledger, script, outcome: m.Reproducibility, runs: int = 30) -> tuple:
    *_, session, baseline = _measure(ledger, script, max_runs=runs, runs=runs)
    baseline.reproducibility = outcome
    ledger.put(baseline)
    return session, baseline


def test_too_noisy_lets_a_round_go_on(ledger):
    session, baseline = _stored(ledger, _gauss(0.05, 7), m.Reproducibility.TOO_NOISY)
    assert c.outcome(ledger, session, baseline) is b.Outcome.TOO_NOISY
    assert c.gate_round(ledger, session).id == baseline.id  # too noisy: not a refusal
    assert c.outcome(ledger, session, baseline, 0.30) is b.Outcome.REPRODUCIBLE


def test_a_drifting_baseline_lets_a_round_go_on_with_a_warning(tmp_path):
    with Ledger.open(tmp_path / "l.db") as ledger:
        session, baseline = _stored(
            ledger, _gauss(0.002, 1, drift=0.01), m.Reproducibility.NOT_REPRODUCIBLE
        )
        assert c.gate_round(ledger, session).id == baseline.id
        notes = baseline_noise_notes(ledger, session, baseline, 0.02)
        assert notes and "absolute figures are unreliable" in notes[0], notes


def test_a_drifting_baseline_with_a_named_cause_refuses_a_round_in_words(tmp_path):
    with Ledger.open(tmp_path / "l.db") as ledger:
        session, baseline = _stored(
            ledger,
            _clocks_moving(_gauss(0.002, 1, drift=0.01)),
            m.Reproducibility.NOT_REPRODUCIBLE,
        )
        want = "not reproducible: drifting, with a cause the telemetry names at ±2%: w: drifting"
        with pytest.raises(c.GateRefused, match=want) as e:
            c.gate_round(ledger, session)
        assert f"gpuopt baseline {session.id}" in str(e.value) and "lock" in str(e.value)
        # a band wide enough to hold the drift: the round may go on at that band
        assert c.gate_round(ledger, session, 0.9).id == baseline.id


# ------------------------------------------------------------------------------ error rates


def test_a_steady_workload_is_almost_never_called_drifting():
    """A/A: 300 baselines of a workload with 3% Gaussian noise at the defaults (10 to 60
    runs, ±2%): the halves come from one distribution, so "drifting" is a false alarm."""
    outcomes = []
    for k in range(300):
        rng = random.Random(1000 + k)
        values = [1.0 + rng.gauss(0, 0.03) for _ in range(60)]
        for look in b.looks(10, 60):
            j = b.judge("w", values[:look], 0.02, final=look == 60)
            if j.outcome is not None:
                break
        outcomes.append(j.outcome)
    drifting = outcomes.count(b.Outcome.DRIFTING) / len(outcomes)
    assert drifting <= 0.01, drifting
    assert None not in outcomes  # never stuck: every one ends with an outcome
