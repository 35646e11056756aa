"""A keep or a reject offers its hypothesis the matching status, with the confidence
change and the next falsifier; the command line prints it and applies nothing."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from test_broken_export import build_broken_session

from ledger import Ledger
from session import models as m
from session.dispositions import apply_status_suggestion, status_suggestion
from tui.cli import main


@pytest.fixture
def led(tmp_path: Path):
    with Ledger.open(tmp_path / "l.db") as ledger:
        build_broken_session(ledger)
        yield ledger


def _decision(ledger: Ledger, name: str, choice: m.DispositionChoice) -> m.Disposition:
    v = next(x for x in ledger.list(m.Variant) if x.name == name)
    return m.Disposition(session_id=v.session_id, variant_id=v.id, choice=choice,
                         reason="r", reopen_when="a new kernel")  # fmt: skip


def test_keep_suggests_supported_and_more_confidence(led: Ledger) -> None:
    s = status_suggestion(led, _decision(led, "fused", m.DispositionChoice.KEEP_DEFAULT))
    assert s is not None and s.status is m.HypothesisStatus.SUPPORTED
    assert s.confidence is m.Confidence.HIGH  # from medium
    assert "proposed → supported, confidence medium → high" in s.text
    assert "next falsifier: the operator count drops but the time does not" in s.text


def test_reject_weakens_or_rejects_by_the_residual(led: Ledger) -> None:
    d = _decision(led, "nomax", m.DispositionChoice.REJECT)
    s = status_suggestion(led, d)
    assert s is not None and s.status is m.HypothesisStatus.WEAKENED
    assert s.confidence is m.Confidence.LOW
    v = led.get(m.Variant, d.variant_id)
    assert v is not None
    led.put(m.Residual(session_id=v.session_id, variant_id=v.id,
                       suggested=m.ResidualClass.NOTHING_MOVED,
                       confirmed=m.ResidualClass.NOTHING_MOVED))  # fmt: skip
    s = status_suggestion(led, d)
    assert s is not None and s.status is m.HypothesisStatus.REJECTED
    assert s.reopen_when == "a new kernel"
    h = apply_status_suggestion(led, s)
    assert h.status is m.HypothesisStatus.REJECTED and h.confidence is m.Confidence.LOW
    assert status_suggestion(led, d) is None  # it says so already


def test_a_control_that_saw_nothing_move_is_supported(led: Ledger) -> None:
    d = _decision(led, "same", m.DispositionChoice.REJECT)
    v = led.get(m.Variant, d.variant_id)
    assert v is not None
    control = m.Hypothesis(session_id=v.session_id, title="a no-op copy changes nothing")
    v.hypothesis_id = control.id
    led.put(control, v)
    led.put(m.Residual(session_id=v.session_id, variant_id=v.id,
                       suggested=m.ResidualClass.NOTHING_MOVED))  # fmt: skip
    s = status_suggestion(led, d)
    assert s is not None and s.status is m.HypothesisStatus.SUPPORTED


def test_a_rejected_broken_variant_weakens_even_when_its_metric_moved(led: Ledger) -> None:
    d = _decision(led, "nomax", m.DispositionChoice.REJECT)
    v = led.get(m.Variant, d.variant_id)
    assert v is not None
    led.put(m.Residual(session_id=v.session_id, variant_id=v.id,
                       suggested=m.ResidualClass.AS_PREDICTED,
                       confirmed=m.ResidualClass.AS_PREDICTED))  # fmt: skip
    s = status_suggestion(led, d)
    assert s is not None and s.status is m.HypothesisStatus.WEAKENED


def test_need_evidence_offers_nothing(led: Ledger) -> None:
    assert status_suggestion(led, _decision(led, "same", m.DispositionChoice.NEED_EVIDENCE)) is None


def test_the_command_line_prints_the_suggestion_and_applies_nothing(led: Ledger) -> None:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        args = ["dispose", "5e55b0000001", "nomax", "--choice", "reject", "--reason", "NaN"]
        code = main(["--ledger", str(led.path), *args, "--reopen-when", "never"])
    assert code == 0, err.getvalue()
    text = out.getvalue()
    assert "suggested, not applied: hypothesis 4f00b0000001" in text
    assert "proposed → weakened" in text
    assert "gpuopt hypothesis status 5e55b0000001 4f00b0000001 --status weakened" in text
    h = led.get(m.Hypothesis, "4f00b0000001")
    assert h is not None and h.status is m.HypothesisStatus.PROPOSED


def _control_measured(
    led: Ledger, verdict: m.Verdict, residual: m.ResidualClass = m.ResidualClass.NOTHING_MOVED
) -> m.Disposition:
    """The `same` variant tests a control (no predicted direction, falsifier: a verdict
    other than SAME); its round read `verdict`, and its residual is `residual`."""
    d = _decision(led, "same", m.DispositionChoice.REJECT)
    v = led.get(m.Variant, d.variant_id)
    assert v is not None
    control = m.Hypothesis(session_id=v.session_id, title="a no-op copy changes nothing",
                           falsifier="a verdict other than SAME",
                           confidence=m.Confidence.MEDIUM)  # fmt: skip
    v.hypothesis_id = control.id
    led.put(control, v)
    for c in led.list(m.Comparison, variant_id=v.id):
        c.verdict = verdict
        led.put(c)
    led.put(m.Residual(session_id=v.session_id, variant_id=v.id, suggested=residual))
    return d


def test_a_control_whose_time_moved_is_weakened_not_supported(led: Ledger) -> None:
    """The control's falsifier fired (FASTER, the metric moved without the mechanism)."""
    s = status_suggestion(
        led, _control_measured(led, m.Verdict.FASTER, m.ResidualClass.METRIC_ONLY)
    )
    assert s is not None and s.status is m.HypothesisStatus.WEAKENED, s
    assert s.confidence is m.Confidence.LOW


def test_a_control_the_round_did_not_decide_is_not_supported(led: Ledger) -> None:
    """INCONCLUSIVE is no evidence either way (and is "a verdict other than SAME"): no
    status is offered, never 'supported, confidence high' as the demo's record said."""
    assert status_suggestion(led, _control_measured(led, m.Verdict.INCONCLUSIVE)) is None
    d = _control_measured(led, m.Verdict.SAME)
    s = status_suggestion(led, d)
    assert s is not None and s.status is m.HypothesisStatus.SUPPORTED
