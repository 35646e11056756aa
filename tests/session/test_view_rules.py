"""The rules of the method as functions of one loaded view: they take no ledger, so a view
built by hand tests them without SQLite, and on a stored session they agree with the forms
that read the ledger themselves (issue 19)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ledger import Ledger
from session import gates
from session import models as m
from session.dispositions import status_suggestion, status_suggestion_in
from session.read_model import load_view
from session.residuals import suggest_residual_in
from session.steps import step_states_of
from session.view import SessionView

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
from sample_session import SID, build_sample, contract

S = m.StepState


def test_the_steps_of_a_view_built_by_hand() -> None:
    session = m.Session(id="hand", title="t", repo="/r", contract=contract())
    view = SessionView(session=session)
    states = {s.step: s.state for s in step_states_of(view)}
    assert states[m.StepName.CONTRACT] is S.DONE
    assert states[m.StepName.BASELINE] is S.NOT_STARTED
    assert states[m.StepName.ROUND] is S.BLOCKED  # no baseline: the round gate refuses
    view.hypotheses = [m.Hypothesis(session_id="hand", title="fewer passes")]
    assert step_states_of(view)[3].state is not S.NOT_STARTED


@pytest.mark.parametrize("upto", [m.StepName.RESULTS, m.StepName.DISPOSITION, m.StepName.RECORD])
def test_the_view_forms_agree_with_the_ledger_forms(tmp_path: Path, upto: m.StepName) -> None:
    with Ledger.open(tmp_path / "s.db") as ledger:
        build_sample(ledger, upto=upto)
        view = load_view(ledger, SID)
        assert view.variants and view.rounds
        read = {
            v.id: (
                gates.latest_comparisons(ledger, v),
                gates.latest_correctness(ledger, v),
                [
                    gates.check_disposition(
                        ledger,
                        view.session,
                        m.Disposition(session_id=SID, variant_id=v.id, choice=c),
                    )
                    for c in m.DispositionChoice
                ],
            )
            for v in view.variants
        }
        offers = [status_suggestion(ledger, d) for d in view.dispositions]
    # the ledger is closed: what follows reads the view alone
    for v in view.variants:
        assert read[v.id] == (
            gates.latest_comparisons_in(view, v),
            gates.latest_correctness_in(view, v),
            [
                gates.check_disposition_in(
                    view, m.Disposition(session_id=SID, variant_id=v.id, choice=c)
                )
                for c in m.DispositionChoice
            ],
        )
        assert suggest_residual_in(view, v).explanation
    assert offers == [status_suggestion_in(view, d) for d in view.dispositions]
    assert [s.state for s in step_states_of(view)] == [s.state for s in view.steps]
