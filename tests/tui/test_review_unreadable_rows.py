"""Review of a ledger with malformed rows: each is named by table and rowid, the rest shown."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from textual.widgets import Static
from tui_helpers import sample_ledger, settle, steady_app

from tui.screens.review import ReviewScreen
from tui.screens.session import SessionScreen

OLD = "01d5e5510000"  # the sample's older session


def _text(widget: Static) -> str:
    from rich.console import Console

    console = Console(width=300, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(widget.content)
    return console.export_text()


def spoil(db: Path) -> dict[str, int]:
    """One row of each kind of damage; their rowids by table."""
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE variants SET data = '{not json' WHERE id = 'v2nomax00001'")
        conn.execute("UPDATE sessions SET data = json_set(data, '$.title', 7) WHERE id = ?", (OLD,))
        rowids = {
            "variants": conn.execute(
                "SELECT rowid FROM variants WHERE id = 'v2nomax00001'"
            ).fetchone()[0],
            "sessions": conn.execute("SELECT rowid FROM sessions WHERE id = ?", (OLD,)).fetchone()[
                0
            ],
        }
    return rowids


@pytest.mark.asyncio
async def test_review_names_unreadable_rows_and_shows_the_rest(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db")
    rowids = spoil(db)
    app = steady_app(db, review=True, readonly=True, telemetry="off")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        note = _text(screen.query_one("#review-unreadable", Static))
        assert f"unreadable row: sessions rowid {rowids['sessions']}" in note
        detail = _text(screen.query_one("#review-detail", Static))
        assert "fused" in detail and "same" in detail  # the readable variants
        note = _text(screen.query_one("#review-unreadable", Static))
        assert f"unreadable row: variants rowid {rowids['variants']}" in note
        await pilot.press("enter")  # the good session opens, read-only
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
        line = _text(app.screen.query_one("#unreadable", Static))
        assert f"unreadable row: variants rowid {rowids['variants']}" in line
        await pilot.press("escape")
        await settle(pilot)
        if isinstance(app.screen, SessionScreen):  # escape may already have gone back
            app.pop_screen()
            await settle(pilot)
        # the unreadable session: its row is named, nothing crashes, nothing opens
        review: object = app.screen
        assert isinstance(review, ReviewScreen)
        review.query_one("#review-sessions").move_cursor(row=1)  # type: ignore[attr-defined]
        await settle(pilot)
        detail = _text(review.query_one("#review-detail", Static))
        assert f"unreadable row: sessions rowid {rowids['sessions']}" in detail
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, SessionScreen)


@pytest.mark.asyncio
async def test_picker_does_not_crash_on_an_unreadable_session(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db")
    rowids = spoil(db)
    app = steady_app(db)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        app.push_screen(SessionScreen(OLD))
        await settle(pilot)
        texts = " ".join(_text(s) for s in app.screen.query(Static))
        assert f"unreadable row: sessions rowid {rowids['sessions']}" in texts
    assert app.return_code in (None, 0)
