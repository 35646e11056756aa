"""A residual is never read from a verdict that cannot be relied on: an untrusted
comparison (its round's baseline moved, its runs quarantined or in two modes) is no
measurement of the prediction, as a speed-up of wrong results is not (a reviewer saw
"moved as predicted" suggested from an untrusted FASTER)."""

from __future__ import annotations

import sys
from pathlib import Path

from ledger import Ledger
from session import models as m
from session.read_model import load_view
from session.residuals import suggest_residual_in

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
from sample_session import SID, build_sample


def test_an_untrusted_faster_is_not_read_as_the_metric_moving(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "s.db") as ledger:
        build_sample(ledger, upto=m.StepName.RECORD)
        view = load_view(ledger, SID)
        fused = next(v for v in view.variants if v.name == "fused")
        before = suggest_residual_in(view, fused)
        assert before.metric == "as_predicted", before  # the sample's trusted FASTER
        rnd = view.rounds[-1]
        c = next(c for c in view.comparisons[rnd.id] if c.variant_id == fused.id)
        c.untrusted_runs = 2
        ledger.put(c)
        after = suggest_residual_in(load_view(ledger, SID), fused)
    assert after.metric == "unmoved", after
    assert after.suggested is not m.ResidualClass.AS_PREDICTED
    assert "untrusted" in after.explanation and "2 run(s) quarantined" in after.explanation
    assert "until a round's verdict is trusted" in after.explanation, after.explanation


def test_a_failed_check_is_the_reason_given_before_an_untrusted_verdict(tmp_path: Path) -> None:
    """Running the round again fixes no failed check: a wrong variant is told to be made
    correct first, whatever else is wrong with its verdict."""
    with Ledger.open(tmp_path / "s.db") as ledger:
        build_sample(ledger, upto=m.StepName.RECORD)
        view = load_view(ledger, SID)
        nomax = next(v for v in view.variants if v.name == "no-max")  # its check failed
        rnd = view.rounds[-1]
        c = next(c for c in view.comparisons[rnd.id] if c.variant_id == nomax.id)
        c.untrusted_runs = 1
        ledger.put(c)
        got = suggest_residual_in(load_view(ledger, SID), nomax)
    assert got.metric == "unmoved"
    assert "correctness check failed" in got.explanation, got.explanation
    assert "untrusted" not in got.explanation, got.explanation
