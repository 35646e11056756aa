"""The Record step draws each markdown table as one widget of text lines, as wide as the
session layer laid it out for (`session.md.table_width`), and each list of one-paragraph
items as one widget: Textual's grid took a widget per cell (384 of the sample record's 656
widgets at 120 columns) and four per list item (318 of 523 at 80), and the step was slow to
open."""

from __future__ import annotations

from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from pane_harness import PaneApp, sample
from rich.cells import cell_len
from test_pane_record import settled, tables
from textual.app import App, ComposeResult
from textual.content import Content
from textual.widgets import Static
from textual.widgets._markdown import MarkdownBullet

from session.md import table_width
from tui.screens.steps.record import RecordPane
from tui.widgets.record_markdown import BulletLines, RecordMarkdown, RecordTable, table_lines


def test_a_table_is_drawn_in_the_width_the_session_layer_counts() -> None:
    cells = [["variant", "ratio (95% CI)"], ["fused", "0.742 (0.731–0.755)"], ["x", ""]]
    head, *rows = [[Content(c) for c in row] for row in cells]
    drawn = table_lines(head, rows)
    lines = drawn.plain.splitlines()
    assert {cell_len(line) for line in lines} == {table_width(cells)}
    assert lines[1] == "│ variant │ ratio (95% CI)      │"
    assert lines[3] == "│ fused   │ 0.742 (0.731–0.755) │"
    assert lines[4] == "│ x       │                     │"  # an empty cell keeps its column


def test_wide_characters_take_the_columns_they_show() -> None:
    """A CJK cell takes two columns a character: the session layer counts them so, and the
    drawn lines are that many columns wide (counted by characters, the table ran past the
    pane and lost its right side)."""
    cells = [["field", "value"], ["what", "融合注意力内核 fused attention"]]
    head, *rows = [[Content(c) for c in row] for row in cells]
    lines = table_lines(head, rows).plain.splitlines()
    assert {cell_len(line) for line in lines} == {table_width(cells)} == {42}


def test_a_table_with_no_rows_has_no_rule_under_its_headings() -> None:
    lines = table_lines([Content("a"), Content("b")], []).plain.splitlines()
    assert lines == ["┌───┬───┐", "│ a │ b │", "└───┴───┘"]


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
            widths = {cell_len(line) for line in text.splitlines()}
            assert widths == {table_width(cells)}, (widths, cells)
        assert len(list(pane.walk_children())) < 150  # was 656, 384 of them table cells
    ledger.close()


class _Doc(App[None]):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        yield RecordMarkdown(self.text)


def _lines(app: App[None]) -> list[str]:
    return ["".join(seg.text for seg in s).rstrip() for s in app.screen._compositor.render_strips()]


@pytest.mark.asyncio
async def test_a_list_of_one_line_items_is_one_widget_wrapped_under_each_items_start() -> None:
    long = "the round stops at its first deciding look, which is usually far sooner than the limit"
    app = _Doc(f"- **What:** a short one\n- {long}\n")
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        md = app.query_one(RecordMarkdown)
        assert len(md.query(BulletLines)) == 1 and not md.query(MarkdownBullet)
        lines = [line for line in _lines(app) if line.strip()]
        assert lines[0].strip() == "• What: a short one"
        start = lines[1].index("•")
        assert lines[1][start:].startswith("• the round stops")
        rest = lines[2:]
        assert rest and all(line[: start + 2].strip() == "" for line in rest)  # hanging indent
        assert " ".join(w for line in lines[1:] for w in line.split()) == "• " + long


@pytest.mark.asyncio
async def test_a_list_whose_items_hold_more_than_a_paragraph_is_drawn_as_textual_draws_it() -> None:
    app = _Doc("- outer\n  - inner one\n  - inner two\n")
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        md = app.query_one(RecordMarkdown)
        assert md.query(MarkdownBullet)  # the outer item holds a list: Textual's widgets
        assert len(md.query(BulletLines)) == 1  # the inner list's items are one line each
        text = "\n".join(_lines(app))
        assert "outer" in text and "inner one" in text and "inner two" in text


@pytest.mark.asyncio
async def test_a_file_name_in_the_record_is_not_made_a_link() -> None:
    """Textual's parser links any word that looks like a domain (kernel.py); the record is
    stored text, and none of it becomes a link, in a list or in a table."""
    assert "linkify" in MarkdownIt("gfm-like").get_active_rules()["core"]  # what it undoes
    app = _Doc("- kernel.py and notes.md\n\n| a |\n| --- |\n| attn.cu |\n")
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        for widget in app.query("BulletLines, TableLines"):
            rendered = widget.render()
            assert isinstance(rendered, Content)
            assert not [s for s in rendered.spans if "link" in str(s.style)], rendered.spans


@pytest.mark.asyncio
async def test_a_table_wider_than_its_view_ends_in_an_ellipsis() -> None:
    app = _Doc("| heading |\n| --- |\n| " + "x" * 60 + " |\n")
    async with app.run_test(size=(30, 10)) as pilot:
        await pilot.pause()
        lines = [line for line in _lines(app) if "x" in line]
        assert lines and all(line.rstrip().endswith("…") for line in lines), lines
