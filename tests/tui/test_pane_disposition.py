"""The disposition pane alone: it lists each choice with what its gates still lack (the
method's own gates) and asks to decide the selected variant."""

from __future__ import annotations

from pathlib import Path

from pane_harness import PaneApp, built, sample
from tui_helpers import sync

from session import models as m
from session.read_model import disposition_gates, load_view
from tui.screens.pane_messages import AskDisposition
from tui.screens.steps.disposition import DispositionPane


@sync
async def test_disposition_pane_shows_the_gates_and_asks_to_decide(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db", m.StepName.DISPOSITION)
    app = PaneApp(DispositionPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        v = app.pane.selected()
        assert v is not None
        view = load_view(ledger, v.session_id)
        assert app.pane.gates_for(v) == disposition_gates(ledger, view, v)
        await pilot.press("d")
        await pilot.pause()
        got = app.holder.got
        assert [type(x) for x in got] == [AskDisposition]
        assert isinstance(got[0], AskDisposition) and got[0].variant.id == v.id
    ledger.close()
