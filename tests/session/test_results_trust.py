"""The Results step is never ✓ while a verdict it holds cannot be relied on: not only a
round whose baseline moved (round-level), but a comparison whose own runs were
quarantined or fell into two modes, the one rule `shown_verdict` states for every door
(a reviewer saw ✓ beside an untrusted verdict)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ledger import Ledger
from session import models as m
from session.read_model import load_view
from session.steps import step_states_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
from sample_session import SID, build_sample

S = m.StepState


def _results(view) -> m.StepStatus:  # type: ignore[no-untyped-def]
    return next(s for s in step_states_of(view) if s.step is m.StepName.RESULTS)


@pytest.mark.parametrize("cause", ["quarantined", "two modes"])
def test_an_untrusted_comparison_keeps_results_open(tmp_path: Path, cause: str) -> None:
    with Ledger.open(tmp_path / "s.db") as ledger:
        build_sample(ledger, upto=m.StepName.RECORD)
        view = load_view(ledger, SID)
        assert "untrusted" not in _results(view).reason  # as built: every verdict trusted
        rnd = view.rounds[-1]
        c = next(c for c in view.comparisons[rnd.id] if view.variant_name(c.variant_id) == "same")
        if cause == "quarantined":
            c.untrusted_runs = 2
            ledger.put(c)
        else:
            rnd.summary = {**rnd.summary, "timing_flags": [
                {"arm": "same", "arm_id": c.variant_id, "workload": c.workload,
                 "runs": [6, 8], "between": 1, "text": "two modes"}]}  # fmt: skip
            ledger.put(rnd)
        status = _results(load_view(ledger, SID))
    assert status.state is S.IN_PROGRESS, status
    said = {"quarantined": "2 run(s) quarantined", "two modes": "fell into two modes"}[cause]
    assert "same/softmax in round 1 is untrusted" in status.reason, status.reason
    assert said in status.reason, status.reason
    # one instruction, one command: never "fix it and run again): run the round again"
    assert status.reason.count("run again") + status.reason.count("run the round") == 1
    assert status.reason.count(f"gpuopt round {SID}") == 1, status.reason
