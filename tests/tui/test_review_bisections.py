"""The review lists a ledger's bisections: a line of commits with their ratios to good."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Static, TabbedContent
from tui_helpers import sample_ledger, settle, steady_app

from ledger import Ledger
from session.bisect import store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bisect"))
from bisect_synthetic import synthetic_bisection


def _text(widget: Static) -> str:
    console = Console(width=300, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(widget.content)
    return console.export_text()


@pytest.mark.asyncio
async def test_the_review_shows_the_line_of_commits(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db")
    with Ledger.open(db) as ledger:
        store.save(ledger, store.Saved(synthetic_bisection(), None))
    app = steady_app(db, review=True, readonly=True, telemetry="off")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        app.screen.query_one("#review-sessions").focus()
        await pilot.press("b")  # its key, offered where there are bisections
        await settle(pilot)
        assert app.screen.query_one("#review-tabs", TabbedContent).active == "bisections"
        shown = _text(app.screen.query_one("#review-bisections", Static))
    assert "ratio to good: #0 1.00" in shown and "#19 1.3" in shown and "change" in shown
    assert "commit 19 [x]" in shown  # stored text shown literally, never as markup


@pytest.mark.asyncio
async def test_no_bisections_no_tab(tmp_path: Path) -> None:
    app = steady_app(sample_ledger(tmp_path / "l.db"), review=True, readonly=True, telemetry="off")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        assert not app.screen.query("#review-bisections")
        assert app.screen.check_action("tab", ("bisections",)) is False
