"""The first screen of `gpuopt` without a command: pick a session or start a new one."""

from __future__ import annotations

from functools import partial
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from tui.display import cell, home_short, plain
from tui.keymap import bindings_help
from tui.screens.modals import HelpModal
from tui.screens.review import ReviewScreen
from tui.screens.session import SessionScreen
from tui.widgets.glossary import glossary
from tui.widgets.palette import PaletteCommand, ScreenCommands

PICKER_GUIDANCE = (
    "Pick a session to continue it, or press n to start a new one. "
    "Each session is one target metric on one repository. Escape in a session comes back here."
)


class PickerScreen(Screen[None]):
    BINDINGS = [
        Binding(
            "enter",
            "open",
            "open",
            show=True,
            priority=False,
            tooltip="Open the selected session",
            id="picker.open",
        ),
        Binding("n", "new", "new session", tooltip="Start a new session", id="picker.new"),
        Binding(
            "v",
            "review",
            "review ledger",
            tooltip="Review this ledger (read-only)",
            id="picker.review",
        ),
        Binding(
            "question_mark",
            "help",
            "help",
            tooltip="Help: the keys of this screen",
            id="picker.help",
        ),
    ]
    COMMANDS = {ScreenCommands}
    _rows: list[dict[str, Any]] = []

    def palette_commands(self) -> list[PaletteCommand]:
        out = [
            PaletteCommand(
                b.tooltip,
                f"key {b.key}",
                partial(self.run_action, b.action),
                words=f"{b.description} session",
            )
            for b in self.BINDINGS
            if isinstance(b, Binding) and b.tooltip
        ]
        for row in self._rows:
            out.append(
                PaletteCommand(
                    f"Open session {plain(row['title'], 60)}",
                    plain(row["id"][:8]),
                    partial(self._open, row["id"]),
                    words="session open",
                )
            )
        return out

    def action_help(self) -> None:
        self.app.push_screen(
            HelpModal("Sessions", PICKER_GUIDANCE, bindings_help(self.app), glossary())
        )

    def compose(self) -> ComposeResult:
        yield Static("", id="title-bar")
        yield Static(PICKER_GUIDANCE, classes="guidance")
        yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
        yield Static("", id="empty", classes="guidance")
        yield Footer()

    def on_mount(self) -> None:
        app: Any = self.app
        self.query_one("#title-bar", Static).update(
            Text.assemble((" gpuopt", "bold"), f" · {plain(home_short(app.ledger.path))}")
        )
        t = self.query_one(DataTable)
        t.add_columns("id", "title", "repository", "created", "hyp", "var", "rounds")
        self.refresh_rows()

    def refresh_rows(self) -> None:
        app: Any = self.app
        t = self.query_one(DataTable)
        t.clear()
        rows = app.ledger.session_rows()
        self._rows = rows
        for r in rows:
            t.add_row(  # stored text: shown literally, never read as markup
                cell(r["id"][:8]),
                cell(r["title"], length=r.get("title_length")),
                cell(r["repo"].rstrip("/").rsplit("/", 1)[-1], 60),
                cell(str(r["created_at"])[:16].replace("T", " ")),
                str(r["hypotheses"]),
                str(r["variants"]),
                str(r["rounds"]),
                key=r["id"],
            )
        self.query_one("#empty", Static).update(
            ""
            if rows
            else "No sessions in this ledger yet. Press n to start one, or run `gpuopt demo`."
        )
        t.display = bool(rows)
        if rows:
            t.focus()

    def on_screen_resume(self) -> None:
        self.refresh_rows()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self._open(str(event.row_key.value))

    def action_open(self) -> None:
        t = self.query_one(DataTable)
        if t.row_count:
            self._open(str(t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value))

    def _open(self, sid: str) -> None:
        self.app.push_screen(SessionScreen(sid, readonly=self.app.ledger.readonly))  # type: ignore[attr-defined]

    def action_new(self) -> None:
        self.app.push_screen(SessionScreen(None))

    def action_review(self) -> None:
        self.app.push_screen(ReviewScreen())
