"""A bisection shows the interval that decided, labelled with its confidence (issue 21,
item 2): the sequential design judges at 1 - alpha/K, so a line saying "95% CI" beside
its verdict named an interval the verdict never used."""

from __future__ import annotations

import math
import random

from bisect_synthetic import synthetic_bisection

from measure import sequential
from measure.stats import paired_log_ratios
from session.bisect import words
from session.bisect.models import Judged
from session.bisect.steps import judge
from session.format import confidence_text
from session.verdicts import LEGACY_CONFIDENCE, interval_confidence, times_ci_text


def _values(scale: float, seed: int, n: int = 16) -> dict[int, float]:
    rng = random.Random(seed)
    return {k: scale * math.exp(rng.gauss(0, 0.02)) for k in range(1, n + 1)}


def test_a_step_keeps_the_interval_that_decided_and_its_confidence() -> None:
    design = sequential.Design.plan(10, 40)
    a, b = _values(1.3, 1), _values(1.0, 2)
    j = judge(a, b, 0.1, design, higher=False, final=False)
    d = paired_log_ratios([b[k] for k in sorted(b)], [a[k] for k in sorted(a)], False)
    look = sequential.judge(d, 0.1, design)
    assert j.verdict is look.verdict
    assert (j.ci_low, j.ci_high) == (look.interval.ci_low, look.interval.ci_high)
    assert j.confidence == look.confidence and j.confidence is not None
    assert interval_confidence(j) == look.confidence != 0.95


def test_the_words_label_each_interval_with_its_own_confidence() -> None:
    rec = synthetic_bisection()
    text = "\n".join([*words.answer_lines(rec), words.markdown(rec, {})])
    assert "95% CI" not in text
    judged = [j for s in rec.steps for j in (s.vs_lo, s.vs_hi) if j and j.ratio is not None]
    assert judged
    for j in judged:
        assert j.confidence is not None and j.confidence > 0.95
        assert f"({confidence_text(j.confidence)} CI {times_ci_text(j.ci_low, j.ci_high)})" in text


def test_a_stored_step_from_before_says_its_95_percent() -> None:
    """A step stored before the confidence was: its interval was the 95% one, said so."""
    old = Judged.model_validate({"verdict": "SLOWER", "n": 12, "ratio": 1.3,
                                 "ci_low": 1.25, "ci_high": 1.35})  # fmt: skip
    assert interval_confidence(old) == LEGACY_CONFIDENCE
    rec = synthetic_bisection()
    rec.answer["confirm"] = old.model_dump(mode="json")
    rec.answer["kind"] = "no difference"
    assert any("(95% CI 1.25–1.35× slower)" in line for line in words.answer_lines(rec))
