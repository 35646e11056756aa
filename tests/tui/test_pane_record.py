"""The record pane alone: it shows the session's decision record and asks for its export."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample
from textual.widgets import Markdown

from tui.screens.pane_messages import ExportRecord
from tui.screens.steps.record import RecordPane


@pytest.mark.asyncio
async def test_record_pane_shows_the_record_and_asks_for_its_export(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RecordPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        pane = app.pane
        assert isinstance(pane, RecordPane)
        assert "5e551011a7c1" in pane.record_markdown()
        assert app.pane.query_one("#record-md", Markdown).source
        await pilot.press("x")
        await pilot.pause()
        assert [type(msg) for msg in app.holder.got] == [ExportRecord]
    ledger.close()


@pytest.mark.asyncio
async def test_record_pane_reads_the_records_model(tmp_path: Path) -> None:
    """The pane shows the record of the same model the export writes: summary first."""
    from session.record import gather, to_markdown

    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RecordPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        pane = app.pane
        assert isinstance(pane, RecordPane) and pane.view is not None
        view = pane.view
        shown = pane.record_markdown()
        assert shown == to_markdown(gather(ledger, view.session))
        assert shown.splitlines()[2].startswith("- **What:**")
    ledger.close()
