"""Every form of the app opens any row the command line can write, unset optional fields
included (issue 25, item 2): `e` on a hypothesis `gpuopt hypothesis add` wrote without
`--direction` crashed the app with InvalidSelectValueError."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tui_helpers import settle, steady_app

from ledger import Ledger
from session import hypotheses as hypo
from session import models as m
from session import preflight as pf
from session.errors import BadInput
from tui.screens.session import SessionScreen
from tui.screens.steps.hypotheses import HypothesesPane
from tui.widgets.form import Field

ROOT = Path(__file__).resolve().parents[2]


def _session(db: Path) -> m.Session:
    s = m.Session(
        title="forms",
        repo=str(db.parent),
        contract=m.Contract(workloads=[m.Workload(name="w", command="true")]),
    )
    with Ledger.open(db) as ledger:
        ledger.put(s)
    return s


def _cli(db: Path, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(db), *args],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.mark.asyncio
@pytest.mark.slow
async def test_e_on_a_hypothesis_added_without_direction(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    s = _session(db)
    _cli(db, "hypothesis", "add", s.id, "--title", "fuse", "--symptom", "slow")
    app = steady_app(db, session_id=s.id)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot, 5)
        pane = app.screen.query_one(HypothesesPane)
        pane.query_one("#hyp-table").focus()
        await pilot.press("e")
        await settle(pilot)
        assert pane.editing is not None
        assert pane.query_one("#field-predicted_direction", Field).value == ""
        assert pane.query_one("#field-symptom", Field).value == "slow"
        pane.action_save()  # nothing edited: nothing written, direction stays unset
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
    with Ledger.open(db, readonly=True) as ledger:
        (h,) = ledger.list(m.Hypothesis, session_id=s.id)
    assert h.predicted_direction is None


TEXT = st.one_of(st.just(""), st.text(alphabet="abc xyz[]\\", max_size=12))
HYPOTHESIS = st.fixed_dictionaries(
    {"title": st.text(alphabet="abcdef", min_size=1, max_size=8)},
    optional={
        "symptom": TEXT,
        "mechanism": TEXT,
        "predicted_effect": TEXT,
        "predicted_direction": st.sampled_from(["lower", "higher"]),
        "falsifier": TEXT,
        "reopen_when": TEXT,
        "confidence": st.sampled_from([c.value for c in m.Confidence]),
        "concern_areas": st.lists(st.sampled_from(list(m.ConcernArea)), max_size=2, unique=True),
    },
)
ANSWER = st.fixed_dictionaries(
    {
        "question": st.sampled_from(list(m.PreflightQuestion)),
        "kind": st.sampled_from(
            [k for k in m.PreflightAnswerKind if k is not m.PreflightAnswerKind.MEASURED]
        ),
        "text": st.text(alphabet="abc ", min_size=1, max_size=8),
    },
    optional={"concern_area": st.sampled_from(list(m.ConcernArea))},
)


async def _open_everything(db: Path, sid: str) -> None:
    app = steady_app(db, session_id=sid)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        for step in (m.StepName.CONTRACT, m.StepName.PREFLIGHT, m.StepName.HYPOTHESES):
            screen.goto(step, focus=True)
            await settle(pilot)
        pane = screen.pane()
        assert isinstance(pane, HypothesesPane)
        table: Any = pane.query_one("#hyp-table")
        for row in range(table.row_count):
            table.move_cursor(row=row)
            pane.action_edit()
            await settle(pilot)
            h = pane.view.hypothesis(pane.editing) if pane.view and pane.editing else None
            assert h is not None
            shown = pane.query_one("#field-predicted_direction", Field).value
            assert shown == (h.predicted_direction.value if h.predicted_direction else "")
            pane.action_status()  # the status form opens on it too
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
        assert isinstance(app.screen, SessionScreen)


# An app run costs about three rows' editing: fewer runs with more rows each open as
# many rows of every kind (3 runs x 2..6 hypotheses and 0..6 answers, as 6 x 1..3, 0..3).
@pytest.mark.slow
@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(HYPOTHESIS, min_size=2, max_size=6), st.lists(ANSWER, max_size=6))
def test_forms_open_rows_with_any_optional_fields(
    hyps: list[dict[str, Any]], answers: list[dict[str, Any]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "l.db"
        s = _session(db)
        with Ledger.open(db) as ledger:  # the doors the command line writes through
            for fields in hyps:
                hypo.add_hypothesis(ledger, s, **fields)
            for a in answers:
                try:
                    pf.set_answer(ledger, s, **a)
                except (ValidationError, BadInput):
                    continue  # refused by the command line too: never stored
        asyncio.run(_open_everything(db, s.id))
