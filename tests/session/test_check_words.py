"""The torch check's words beside a verdict: the failed trial's headline, "at float16"
for a declared precision change, a second look past 10×, the roofline floor."""

from __future__ import annotations

from session import check_words
from session import models as m
from session.verdicts import shown_verdict


def _check(passed: bool, tail: str = "", **options: str) -> m.CorrectnessResult:
    return m.CorrectnessResult(
        session_id="s", variant_id="v", workload="w", passed=passed, output_tail=tail,
        options=dict(options),
    )  # fmt: skip


def _comparison(ratio: float, verdict: m.Verdict = m.Verdict.FASTER) -> m.Comparison:
    return m.Comparison(
        round_id="r", variant_id="v", workload="w", n=10, ratio=ratio, verdict=verdict
    )


def test_a_failed_torch_check_shows_the_trial_that_failed_and_its_biggest_error() -> None:
    tail = "failed on stress ×100: max abs 0.0058, 12 mismatches, NaN 0→0\nout: …"
    shown = shown_verdict(_comparison(0.5), [_check(False, tail)])
    assert shown.broken
    assert shown.failure == "failed on stress ×100: max abs 0.0058, 12 mismatches, NaN 0→0"
    # before: the generic words of the main trials' statistics hid which trial failed
    assert check_words.check_headline(_check(False, "out: max rel 5.8e-3 > 1.3e-6")) == ""


def test_a_declared_precision_change_reads_at_float16() -> None:
    shown = shown_verdict(
        _comparison(0.5), [_check(True, "passed at float16", precision="at float16")]
    )
    assert shown.text == "FASTER at float16"
    assert shown_verdict(_comparison(0.5), [_check(True)]).text == "FASTER"


def test_over_ten_times_faster_asks_for_a_second_look() -> None:
    shown = shown_verdict(_comparison(1 / 49), [_check(True)])
    assert shown.word == "FASTER" and shown.text == "FASTER · second look"
    assert shown.caution.startswith("49× faster: have a second look")
    assert check_words.second_look(0.5) == ""


def test_a_time_below_the_roofline_floor_is_not_a_speedup() -> None:
    words = check_words.below_floor(0.002, 0.05)
    assert words.endswith("faster than this machine can compute it: check the candidate")
    assert check_words.below_floor(0.06, 0.05) == ""
