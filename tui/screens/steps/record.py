"""The record step: the decision record itself, laid out for the pane's width, and its export."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from session import models as m
from session.api import (
    default_export_dir,
    export_failed_words,
    export_writing_words,
    export_written_words,
    record_for_width,
    record_model,
    record_next,
)
from session.read_model import SessionView
from tui.display import plain
from tui.screens.pane_messages import ExportRecord
from tui.screens.step_base import StepPane

# The narrowest layout: below it the pane is too small to read anyway, and the record is
# laid out as for 40 columns (the pane scrolls).
MIN_WIDTH = 40
# The Markdown widget's own padding, left and right, and the scroll bar beside it.
_MARGINS = 2 + 2 + 2


class RecordPane(StepPane):
    step = m.StepName.RECORD
    GUIDANCE = (
        "The decision record: what was measured, against what, what was decided and why. "
        "Press x to write it as markdown and JSON."
    )
    BINDINGS = [Binding("x", "export", "export record", id="record.export")]
    # the heading right under "Next:" (whose margin is the one blank row), not three rows
    # down: the export line takes no row until it says something, the heading no margin
    DEFAULT_CSS = """
    RecordPane #record-export { display: none; }
    RecordPane #record-export.-said { display: block; }
    RecordPane #record-md MarkdownH1 { margin: 0 0 1 0; }
    """

    _record_of: SessionView | None = None
    _record: Any = None  # the record's model, read once per view
    _record_md = ""
    _shown_md: str | None = None
    _exporting = False  # an export asked for and not yet answered

    def body(self) -> ComposeResult:
        # markdown-it costs 0.1 s: only when shown
        from tui.widgets.record_markdown import RecordMarkdown

        yield Static("", id="record-export", classes="next")
        yield RecordMarkdown("", id="record-md")

    def next_hint(self, view: SessionView | None) -> str:
        return record_next(view, self.step_keys(export="record.export"))

    def refresh_body(self, view: SessionView | None) -> None:
        if view is None:
            return
        md = self.record_markdown()
        if md == self._shown_md:  # a resize to the same layout: nothing to draw again
            return
        self._shown_md = md
        from textual.widgets import Markdown  # as above: loaded with the pane's body

        # stored text inside the record: controls made visible, newlines kept
        self.query_one("#record-md", Markdown).update(plain(md, None, multiline=True))

    def record_width(self) -> int:
        """The columns the record is laid out for: the pane's, less the viewer's margins."""
        width = self.size.width or self.app.size.width
        return max(MIN_WIDTH, width - _MARGINS)

    def record_markdown(self) -> str:
        """The record of the view shown, read once per view (it reads the whole session)
        and laid out for the pane's width."""
        view = self.view
        if view is None:
            return ""
        if self._record_of is not view:
            self._record_of = view
            try:
                self._record = record_model(self.context.ledger, view.session, view)
            except Exception as exc:  # shown in the pane, in words: the rest of the app lives
                self._record = None
                self._record_md = f"The record could not be built: {exc}"
        if self._record is not None:
            self._record_md = record_for_width(self._record, self.record_width())
        return self._record_md

    def action_export(self) -> None:
        """Say at once that the record is being written, and where; ask for the export
        once that line is on screen. The line stays until the screen hands back the
        written path or the error (`export_finished`); x meanwhile writes nothing more."""
        if self._exporting:
            self.notify("The record is being written.", markup=False)
            return
        self._exporting = True
        target = getattr(self.app, "export_dir", None) or default_export_dir()
        self.export_line(plain(export_writing_words(target), None))
        self.call_after_refresh(self.post_message, ExportRecord())

    def export_finished(self, path: str, error: str = "") -> None:
        """The export's end, as the session screen was told it: the path, or the error."""
        self._exporting = False
        if error:
            self.export_line(plain(export_failed_words(error), 1000))
        else:
            self.export_line(plain(export_written_words(path), None, multiline=True))

    def export_line(self, text: str) -> None:
        line = self.query_one("#record-export", Static)
        line.update(text)
        line.set_class(bool(text), "-said")  # an empty line takes no row
