"""The record step: the decision record, and its export."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding

from session import models as m
from session.read_model import SessionView
from session.record_files import record_markdown
from tui.display import plain
from tui.screens.pane_messages import ExportRecord
from tui.screens.step_base import StepPane


class RecordPane(StepPane):
    step = m.StepName.RECORD
    GUIDANCE = (
        "The decision record: what was measured, against what, what was decided and why. "
        "Press x to write it as markdown and JSON."
    )
    BINDINGS = [Binding("x", "export", "export record", id="record.export")]

    _record_of: SessionView | None = None
    _record_md = ""

    def body(self) -> ComposeResult:
        from textual.widgets import Markdown  # markdown-it costs 0.1 s: only when shown

        yield Markdown("", id="record-md")

    def next_hint(self, view: SessionView | None) -> str:
        if view is None:
            return "save the contract first."
        return "press x to export the record (markdown and JSON)."

    def refresh_body(self, view: SessionView | None) -> None:
        if view is None:
            return
        md = self.record_markdown()
        from textual.widgets import Markdown  # as above: loaded with the pane's body

        # stored text inside the record: controls made visible, newlines kept
        self.query_one("#record-md", Markdown).update(plain(md, None, multiline=True))

    def record_markdown(self) -> str:
        """The record of the view shown, built once per view (it reads the whole session)."""
        view = self.view
        if view is None:
            return ""
        if self._record_of is not view:
            self._record_of = view
            try:
                self._record_md = record_markdown(self.context.ledger, view.session, view)
            except Exception as exc:  # shown in the pane, in words: the rest of the app lives
                self._record_md = f"The record could not be built: {exc}"
        return self._record_md

    def action_export(self) -> None:
        self.post_message(ExportRecord())
