"""session.verdicts: the verdict a reviewer sees, and the words for ratios and bytes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from session import models as m
from session.verdicts import (
    CHECK_COMMAND,
    VERDICT_MEANINGS,
    bytes_text,
    change_words,
    ci_heading,
    failure_words,
    round_untrusted,
    shown_verdict,
    times_ci_text,
    times_text,
)


def _cmp(verdict: m.Verdict = m.Verdict.FASTER, **kw: Any) -> m.Comparison:
    return m.Comparison(
        round_id="r1", variant_id="v1", workload="w", n=12, ratio=0.5, ci_low=0.48,
        ci_high=0.52, verdict=verdict, **kw,
    )  # fmt: skip


def _check(passed: bool, workload: str = "w", **kw: Any) -> m.CorrectnessResult:
    return m.CorrectnessResult(
        session_id="s", variant_id="v1", workload=workload, passed=passed, **kw
    )


def _round(**kw: Any) -> m.Round:
    fields: dict[str, Any] = {"status": m.RoundStatus.COMPLETED, "blocks": 12, **kw}
    return m.Round(id="r1", session_id="s", baseline_id="b", **fields)


def test_failed_check_is_broken_with_the_failure_in_words() -> None:
    stats = m.ErrorStats(nan_ref=0, nan_new=80, max_abs=4.77e-7, max_rel=1.1e-6, passed=False)
    v = shown_verdict(_cmp(), [_check(False, stats=[stats])])
    assert v.word == "BROKEN" and v.broken and v.correct is False
    assert v.speed is m.Verdict.FASTER
    assert v.failure == "NaN 0→80"
    assert v.text == "BROKEN (NaN 0→80)"
    assert v.fields() == {
        "verdict": "BROKEN", "speed_verdict": "FASTER", "correct": False, "trusted": True,
        "verdict_words": "", "ci_confidence": 0.95,
    }  # fmt: skip


def test_tolerance_words() -> None:
    s = m.ErrorStats(max_rel=3.1e-2, rtol=1e-5, max_abs=1e-3, atol=1e-8, passed=False)
    assert failure_words(_check(False, stats=[s])) == "max rel 3.1e-2 > 1e-5"
    shape = m.ErrorStats(shape_equal=False, ref_shape=[2, 3], new_shape=[3, 2], passed=False)
    assert failure_words(_check(False, stats=[shape])) == "shape [2, 3] → [3, 2]"
    assert failure_words(_check(False, workload=CHECK_COMMAND, exit_code=3)) == "check exited 3"
    err = _check(False, error="Traceback\n  File x\nRuntimeError: boom")
    assert failure_words(err) == "raised RuntimeError: boom"


def test_passing_or_other_workload_leaves_the_speed_verdict() -> None:
    assert shown_verdict(_cmp(), [_check(True)]).text == "FASTER"
    assert shown_verdict(_cmp(), [_check(True)]).correct is True
    assert shown_verdict(_cmp(), []).correct is None
    other = _check(False, workload="other")
    assert shown_verdict(_cmp(), [other]).word == "FASTER"
    # a check command covers every workload
    assert shown_verdict(_cmp(), [_check(False, workload=CHECK_COMMAND, exit_code=1)]).broken


def test_a_failed_arm_with_a_failed_check_is_broken() -> None:
    v = shown_verdict(_cmp(m.Verdict.FAILED), [_check(False, exit_code=1)])
    assert v.word == "BROKEN" and v.speed is m.Verdict.FAILED


def test_checks_after_the_round_do_not_count_but_the_latest_before_does() -> None:
    rnd = _round()
    rnd.ended_at = rnd.started_at + timedelta(minutes=1)
    early = _check(False, exit_code=1)
    early.created_at = rnd.started_at
    late = _check(True)
    late.created_at = rnd.ended_at + timedelta(minutes=5)
    assert shown_verdict(_cmp(), [early, late], rnd).broken
    fixed = _check(True)
    fixed.created_at = rnd.started_at + timedelta(seconds=30)
    assert not shown_verdict(_cmp(), [early, fixed], rnd).broken


def test_untrusted_round_and_quarantined_runs() -> None:
    rnd = _round(baseline_reproduced=False)
    assert round_untrusted(rnd) == "baseline not reproduced"
    v = shown_verdict(_cmp(), [], rnd)
    assert not v.trusted and v.text == "FASTER · untrusted"
    q = shown_verdict(_cmp(untrusted_runs=2), [], _round())
    assert not q.trusted and "2 run(s) quarantined" in q.untrusted_why
    assert round_untrusted(_round(blocks=4)) == "4 of at least 10 blocks"


def test_ratio_and_byte_words() -> None:
    assert times_text(0.206) == "4.85× faster"
    assert times_text(1.2) == "1.20× slower"
    assert times_text(1.0) == "no change"
    assert times_text(None) == "—"
    assert times_ci_text(0.2, 0.25) == "4.00–5.00× faster"
    assert times_ci_text(1.1, 1.2) == "1.10–1.20× slower"
    assert times_ci_text(0.95, 1.05) == "1.05× faster to 1.05× slower"
    assert bytes_text(512) == "512 B"
    assert bytes_text(3 * 2**20 + 2**19) == "3.5 MiB"
    assert bytes_text(5 * 2**30) == "5 GiB"


def test_a_measurable_change_is_said_in_words_with_the_interval_that_decided() -> None:
    c = _cmp(m.Verdict.MEASURABLE, confidence=0.998)
    c.ratio, c.ci_low, c.ci_high = 1.018, 1.004, 1.031
    v = shown_verdict(c, [], _round(threshold=0.02))
    assert v.word == "MEASURABLE"
    assert v.text == "MEASURABLE 1.8% slower (real, below the ±2% band)"
    assert v.fields()["verdict_words"] == "1.8% slower (real, below the ±2% band)"
    assert v.fields()["ci_confidence"] == 0.998
    assert ci_heading([c]) == "99.8% CI"


def test_a_measurable_change_beyond_the_band_is_not_said_to_be_below_it() -> None:
    assert change_words(m.Verdict.MEASURABLE, 0.96, 0.02) == (
        "4.0% faster (real; not shown beyond the ±2% band)"
    )
    assert change_words(m.Verdict.FASTER, 0.5, 0.02) == ""
    assert change_words(m.Verdict.INCONCLUSIVE, 1.01, 0.02) == ""


def test_rows_from_before_the_design_interval_was_kept_say_95() -> None:
    old = _cmp()  # no confidence stored: the 95% interval was kept then
    assert ci_heading([old]) == "95% CI"
    assert ci_heading([old, _cmp(confidence=0.99)]) == "CI"  # mixed: no single label


def test_the_glossary_names_no_interval_the_verdict_was_not_decided_on() -> None:
    """The meanings said "the whole 95% interval" while the verdict used a 99% one."""
    assert not any("95%" in text for text in VERDICT_MEANINGS.values())
    assert "MEASURABLE" in VERDICT_MEANINGS
    assert "never a win" in VERDICT_MEANINGS["MEASURABLE"]
