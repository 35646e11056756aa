"""The disposition pane alone: it lists each choice with what its gates still lack (the
method's own gates) and asks to decide the selected variant."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample

from session import models as m
from session.read_model import disposition_gates, load_view
from tui.screens.pane_messages import AskDisposition
from tui.screens.steps.disposition import DispositionPane


@pytest.mark.asyncio
async def test_disposition_pane_shows_the_gates_and_asks_to_decide(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db", m.StepName.DISPOSITION)
    app = PaneApp(DispositionPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        pane = app.pane
        assert isinstance(pane, DispositionPane)
        v = pane.selected()
        assert v is not None
        view = load_view(ledger, v.session_id)
        assert pane.gates_for(v) == disposition_gates(ledger, view, v)
        await pilot.press("d")
        await pilot.pause()
        got = app.holder.got
        assert [type(x) for x in got] == [AskDisposition]
        assert isinstance(got[0], AskDisposition) and got[0].variant.id == v.id
    ledger.close()


@pytest.mark.asyncio
async def test_a_decision_offers_its_hypothesis_status_and_only_a_yes_writes_it(
    tmp_path: Path,
) -> None:
    from tui.screens.modals import ConfirmModal
    from tui.screens.pane_messages import ReloadView

    ledger = sample(tmp_path / "l.db", m.StepName.DISPOSITION)
    sid = ledger.list(m.Session)[0].id
    v = ledger.list(m.Variant, session_id=sid, order_by="created_at, rowid")[0]
    h = m.Hypothesis(session_id=sid, title="one pass", falsifier="time flat while ops drop",
                     confidence=m.Confidence.MEDIUM)  # fmt: skip
    v.hypothesis_id = h.id
    ledger.put(h, v)
    ledger.put(m.Disposition(session_id=sid, variant_id=v.id,
                             choice=m.DispositionChoice.KEEP_DEFAULT))  # fmt: skip
    app = PaneApp(DispositionPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        pane = app.pane
        assert isinstance(pane, DispositionPane)
        table = pane.query_one("#disp-table")
        rows = [r.key.value for r in table.rows.values()]  # type: ignore[attr-defined]
        table.move_cursor(row=rows.index(v.id))  # type: ignore[attr-defined]
        await pilot.pause()
        shown = str(pane.query_one("#disp-gates").render())
        assert "The evidence suggests" in shown and "proposed → supported" in shown
        assert "confidence medium → high" in shown and "time flat while ops drop" in shown
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("n")  # no: nothing changes
        await pilot.pause()
        got = ledger.get(m.Hypothesis, h.id)
        assert got is not None and got.status is m.HypothesisStatus.PROPOSED
        await pilot.press("u")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        got = ledger.get(m.Hypothesis, h.id)
        assert got is not None and got.status is m.HypothesisStatus.SUPPORTED
        assert got.confidence is m.Confidence.HIGH
        assert any(isinstance(x, ReloadView) for x in app.holder.got)
    ledger.close()
