"""Issue 22 item 8 / build 2: while g records the baseline again from the Round step, the
session screen hands that baseline's reports to the Round pane too (they went to the
Baseline pane only, so the Round pane said "recording the baseline again" and nothing
more): its runs, and the ETA the engine gives from their pace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sample_session import RID, SID
from textual.widgets import Static
from tui_helpers import sample_ledger, settle, steady_app, step_keys, until

from ledger import Ledger
from session import models as m
from session.conduct import Progress
from tui.screens.session import SessionScreen


def _status(app: Any) -> str:
    content: Any = app.screen.query_one("#round-status", Static).content
    return str(getattr(content, "plain", content))


@pytest.mark.asyncio
@pytest.mark.slow  # over 2 s at rest: kept out of the quick subset
async def test_the_round_pane_shows_the_runs_of_the_baseline_g_records_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = sample_ledger(tmp_path / "l.db")
    with Ledger.open(path) as ledger:
        rnd = ledger.get(m.Round, RID)
        rnd.baseline_reproduced, rnd.baseline_check = False, 0.924  # g is offered
        ledger.put(rnd)
    # the baseline's thread is not started (the sample's repository is not on this
    # machine): its reports are posted below by the callback the thread is given
    started: list[tuple[Any, ...]] = []
    monkeypatch.setattr(SessionScreen, "_baseline_worker", lambda self, *a: started.append(a))
    app = steady_app(path, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await step_keys(pilot, "5")
        await settle(pilot)
        await step_keys(pilot, "g")
        await until(pilot, lambda: app.screen.busy == "baseline")
        assert started and app.screen.busy == "baseline"
        report = app.screen._progress("baseline")  # what the baseline's thread calls
        report(Progress("baseline", "softmax: run 3 of 10", runs_done=4, runs_total=12))
        await until(pilot, lambda: "runs 4/12" in _status(app))
        shown = _status(app)
        assert "softmax: run 3 of 10" in shown and "runs 4/12" in shown, shown
        assert "block" not in shown, shown
        assert "ETA" not in shown, shown  # the engine gave none: none made up here
        report(Progress("baseline", "softmax: run 5 of 10", runs_done=6, runs_total=12,
                        eta_s=65.0))  # fmt: skip
        await until(pilot, lambda: "runs 6/12" in _status(app))
        shown = _status(app)
        assert "ETA 1m05s" in shown, shown  # the engine's, from its pace
