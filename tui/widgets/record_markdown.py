"""The Record step's markdown view: Textual's, with each table and each list of one-line
items drawn as one widget.

Textual draws a markdown table as a grid with a widget per cell, and a list item as four
widgets (a row, its bullet, a column, the paragraph); a decision record holds hundreds of
cells and items, and mounting, styling and laying out a widget each made the step slow to
open (a sample record at 80 columns: 523 widgets, 318 of them its 106 items). The record's
tables are laid out by the session layer to fit the pane (`session.md.table_width`), one
line per cell, so each is drawn as lines of text in that same width: a border, one space
each side of a cell. A list whose items are each one paragraph is drawn as lines too, each
item wrapped under its first word, as Textual's list draws it.
"""

from __future__ import annotations

from collections.abc import Sequence

from markdown_it import MarkdownIt
from textual.app import ComposeResult
from textual.content import Content
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets._markdown import (
    MarkdownBulletList,
    MarkdownListItem,
    MarkdownParagraph,
    MarkdownTable,
)


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
    lines = [rule("┌", "┬", "┐"), line(head)]
    if len(grid) > 1:
        lines.append(rule("├", "┼", "┤"))
        lines += [line(row) for row in grid[1:]]
    lines.append(rule("└", "┴", "┘"))
    return Content("\n").join(lines)


class TableLines(Static):
    """The lines of one table. A line wider than the view (a pane narrower than the record's
    narrowest layout) ends in an ellipsis, never cut silently."""

    DEFAULT_CSS = """
    TableLines { width: 1fr; height: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    async def action_link(self, href: str) -> None:
        """A link in a cell: passed on to the markdown view, as Textual's cells do."""
        self.post_message(Markdown.LinkClicked(self.query_ancestor(Markdown), href))


class RecordTable(MarkdownTable):
    """A markdown table drawn as one widget of text lines."""

    DEFAULT_CSS = """
    RecordTable { width: 1fr; height: auto; margin-bottom: 1; }
    """

    def compose(self) -> ComposeResult:
        headers, rows = self._get_headers_and_rows()
        self._headers, self._rows = headers, rows
        yield TableLines(table_lines(headers, rows))


class BulletLines(Widget):
    """A list's items as lines: the bullet, then the item's text wrapped under its start."""

    DEFAULT_CSS = """
    BulletLines { width: 1fr; height: auto; }
    """

    def __init__(self, items: Sequence[tuple[str, Content]]) -> None:
        super().__init__()
        self.items = list(items)
        self._wrapped: tuple[int, Content] | None = None

    def lines(self, width: int) -> Content:
        """The items laid out for `width` columns (kept for the last width asked)."""
        if self._wrapped is None or self._wrapped[0] != width:
            out: list[Content] = []
            for bullet, text in self.items:
                indent = len(bullet)
                for i, line in enumerate(text.wrap(max(1, width - indent))):
                    lead = Content.styled(bullet, "$text-primary") if i == 0 else " " * indent
                    out.append(Content.assemble(lead, line))
            self._wrapped = (width, Content("\n").join(out))
        return self._wrapped[1]

    def get_content_height(self, _container: Size, _viewport: Size, width: int) -> int:
        return len(self.lines(width).plain.split("\n")) if width > 0 else 0

    def render(self) -> Content:
        return self.lines(self.content_region.width or self.size.width)

    async def action_link(self, href: str) -> None:
        """A link in an item: as Textual's list passes it on, to the markdown view."""
        self.post_message(Markdown.LinkClicked(self.query_ancestor(Markdown), href))


class RecordBulletList(MarkdownBulletList):
    """A bullet list drawn as one `BulletLines` when each item is one paragraph; any other
    (an item holding a list, a table, two paragraphs) as Textual draws it."""

    def compose(self) -> ComposeResult:
        items = [b for b in self._blocks if isinstance(b, MarkdownListItem)]
        simple = all(
            len(item._blocks) == 1 and type(item._blocks[0]) is MarkdownParagraph for item in items
        )
        if not simple:
            yield from super().compose()
            return
        yield BulletLines([(item.bullet, item._blocks[0]._content) for item in items])
        self._blocks.clear()


def _parser() -> MarkdownIt:
    """Textual's parser less linkify: the record's text is stored text, and a file name in
    it (kernel.py) is not a web address (`session.md.md_cell` makes no input a link)."""
    return MarkdownIt("gfm-like").disable("linkify")


class RecordMarkdown(Markdown):
    """Textual's markdown view, with tables drawn by `RecordTable` and lists of one-line
    items by `RecordBulletList`."""

    BLOCKS = {**Markdown.BLOCKS, "table_open": RecordTable, "bullet_list_open": RecordBulletList}

    def __init__(self, markdown: str | None = None, *, id: str | None = None) -> None:
        super().__init__(markdown, id=id, parser_factory=_parser)
