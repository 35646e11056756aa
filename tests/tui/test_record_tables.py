"""The Record step draws each markdown table as one widget of text lines, as wide as the
session layer laid it out for (`session.md.table_width`): Textual's grid took a widget per
cell, 384 of the sample record's 656 widgets, and the step was slow to open."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, sample
from test_pane_record import settled, tables
from textual.content import Content
from textual.widgets import Static

from session.md import table_width
from tui.screens.steps.record import RecordPane
from tui.widgets.record_markdown import RecordTable, table_lines


def test_a_table_is_drawn_in_the_width_the_session_layer_counts() -> None:
    cells = [["variant", "ratio (95% CI)"], ["fused", "0.742 (0.731–0.755)"], ["x", ""]]
    head, *rows = [[Content(c) for c in row] for row in cells]
    drawn = table_lines(head, rows)
    lines = drawn.plain.splitlines()
    assert {len(line) for line in lines} == {table_width(cells)}
    assert lines[1] == "│ variant │ ratio (95% CI)      │"
    assert lines[3] == "│ fused   │ 0.742 (0.731–0.755) │"
    assert lines[4] == "│ x       │                     │"  # an empty cell keeps its column


def test_a_short_row_keeps_the_table_square() -> None:
    drawn = table_lines([Content("a"), Content("b")], [[Content("only")]])
    assert len({len(line) for line in drawn.plain.splitlines()}) == 1


@pytest.mark.asyncio
async def test_the_record_step_draws_each_table_as_one_widget(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RecordPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.pane
        assert isinstance(pane, RecordPane)
        viewer = await settled(pilot, pane)
        shown = tables(pane.record_markdown())
        drawn = list(viewer.query(RecordTable))
        assert len(drawn) == len(shown) > 0
        for table, cells in zip(drawn, shown, strict=True):
            assert len(list(table.walk_children())) == 1  # its text, not a widget a cell
            text = str(table.query_one(Static).render())
            widths = {len(line) for line in text.splitlines()}
            assert widths == {table_width(cells)}, (widths, cells)
        assert len(list(pane.walk_children())) < 300  # was 656, 384 of them table cells
    ledger.close()
