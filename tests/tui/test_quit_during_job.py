"""ctrl+q while a baseline runs asks first, then stops after the current run and quits."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tui_helpers import settle, steady_app

from ledger import Ledger
from session import models as m
from tui.screens.modals import QuitModal
from tui.screens.session import SessionScreen

pytest.importorskip("session.conduct")


@pytest.mark.asyncio
@pytest.mark.slow
async def test_ctrl_q_during_a_baseline_asks_then_stops_cleanly(tmp_path: Path, make_repo) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo()
    db = tmp_path / "l.db"
    s = m.Session(
        title="slow",
        repo=str(repo),
        contract=m.Contract(workloads=[m.Workload(name="nap", command="sleep 0.15")]),
    )
    with Ledger.open(db) as ledger:
        ledger.put(s)
    app = steady_app(db, session_id=s.id)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        screen.goto(m.StepName.BASELINE)
        await settle(pilot)
        screen.start_baseline(runs=200, warmup=0)
        await pilot.pause(1.0)
        assert screen.busy == "baseline"
        # first ctrl+q: asked; "keep running" goes on measuring
        await pilot.press("ctrl+q")
        await settle(pilot)
        assert isinstance(app.screen, QuitModal)
        await pilot.press("k")
        await settle(pilot)
        assert app.screen is screen and screen.busy == "baseline"
        assert app.return_code is None
        # second ctrl+q: stop after the current run, then quit
        await pilot.press("ctrl+q")
        await settle(pilot)
        assert isinstance(app.screen, QuitModal)
        await pilot.press("s")
        for _ in range(100):
            if app.return_code is not None:
                break
            await asyncio.sleep(0.1)
        assert app.return_code == 0, "the app did not quit once the run ended"
    with Ledger.open(db, readonly=True) as ledger:
        (b,) = ledger.list(m.Baseline, session_id=s.id)
        runs = ledger.query("SELECT COUNT(*) AS n FROM runs WHERE baseline_id = ?", (b.id,))
    assert b.reproducibility is m.Reproducibility.UNJUDGED
    assert "interrupted" in b.reproducibility_detail
    assert 0 < runs[0]["n"] < 200  # stopped early, what was measured is kept
    worktrees = tmp_path / "worktrees"
    assert not worktrees.exists() or not any(worktrees.iterdir())  # removed, none left
