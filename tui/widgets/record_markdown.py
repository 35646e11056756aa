"""The Record step's markdown view: Textual's, with each table drawn as one widget.

Textual draws a markdown table as a grid with a widget per cell; a decision record holds
hundreds of cells, and mounting, styling and laying out a widget each made the step slow to
open (a sample record: 384 of its 656 widgets). The record's tables are laid out by the
session layer to fit the pane (`session.md.table_width`), one line per cell, so here each
is drawn as lines of text in that same width: a border, one space each side of a cell.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Markdown, Static
from textual.widgets._markdown import MarkdownTable


def table_lines(headers: Sequence[Content], rows: Sequence[Sequence[Content]]) -> Content:
    """The table as text: `│ cell │ cell │`, a rule under the headings, each column as wide
    as its widest cell (the width `session.md.table_width` counts)."""
    columns = max([len(headers), *(len(row) for row in rows)], default=0)
    if columns == 0:
        return Content("")
    empty = Content("")
    grid = [[*row, *[empty] * (columns - len(row))] for row in [list(headers), *map(list, rows)]]
    widths = [max(row[i].cell_length for row in grid) for i in range(columns)]
    bar = "$foreground 30%"

    def line(cells: Sequence[Content]) -> Content:
        parts: list[Content | tuple[str, str]] = [("│ ", bar)]
        for i, cell in enumerate(cells):
            if i:
                parts.append((" │ ", bar))
            parts.append(cell.pad_right(widths[i] - cell.cell_length))
        parts.append((" │", bar))
        return Content.assemble(*parts)

    def rule(left: str, middle: str, right: str) -> Content:
        return Content.styled(left + middle.join("─" * (w + 2) for w in widths) + right, bar)

    head = [cell.stylize("bold $text-primary") for cell in grid[0]]
    lines = [rule("┌", "┬", "┐"), line(head), rule("├", "┼", "┤")]
    lines += [line(row) for row in grid[1:]]
    lines.append(rule("└", "┴", "┘"))
    return Content("\n").join(lines)


class RecordTable(MarkdownTable):
    """A markdown table drawn as one widget of text lines."""

    DEFAULT_CSS = """
    RecordTable { width: auto; height: auto; margin-bottom: 1; }
    RecordTable > Static { width: auto; height: auto; }
    """

    def compose(self) -> ComposeResult:
        headers, rows = self._get_headers_and_rows()
        self._headers, self._rows = headers, rows
        yield Static(table_lines(headers, rows), classes="record-table")


class RecordMarkdown(Markdown):
    """Textual's markdown view, with tables drawn by `RecordTable`."""

    BLOCKS = {**Markdown.BLOCKS, "table_open": RecordTable}
