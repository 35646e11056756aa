"""The results pane draws from the view it is shown: a fresh view's first draw and every
resize after it read nothing from the ledger (issue 19; step_base.on_resize redraws the
body on each resize). Counted on the ledger's real SQLite connection."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample
from rich.console import Console
from sample_session import SID
from textual.widgets import Static

from session.read_model import load_view
from tui.screens.steps.results import ResultsPane


@pytest.mark.asyncio
async def test_a_results_redraw_and_resize_read_nothing(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(ResultsPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        view = load_view(ledger, SID)  # a refresh: the one read of the session
        statements: list[str] = []
        ledger._c.conn.set_trace_callback(statements.append)
        try:
            app.pane.show(view)
            await pilot.pause()
            await pilot.resize_terminal(90, 40)
            await pilot.pause()
            await pilot.resize_terminal(130, 40)
            await pilot.pause()
        finally:
            ledger._c.conn.set_trace_callback(None)
        assert app.pane.content_size.width > 100  # the last resize was drawn
        detail = Console(record=True, width=200)
        detail.print(app.pane.query_one("#results-detail", Static).content)
        assert "residual" in detail.export_text()  # the suggestion was drawn, from the view
        assert statements == []
    ledger.close()
