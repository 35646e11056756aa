"""The first screen of `gpuopt` without a command: pick a session or start a new one."""

from __future__ import annotations

from functools import partial
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static

from session.api import GpuoptError, Session, picker_guidance
from session.read_model import session_rows
from tui.display import cell, home_short, plain
from tui.keymap import bindings_help, key_of_id
from tui.screens.modals import ConfirmModal, ErrorModal, FormModal, HelpModal
from tui.screens.review import ReviewScreen
from tui.screens.session import SessionScreen
from tui.screens.session_manage import deleted_words
from tui.widgets.footer import SteadyFooter
from tui.widgets.form import Field
from tui.widgets.glossary import glossary
from tui.widgets.palette import PaletteCommand, ScreenCommands


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
        Binding("e", "rename", "rename", tooltip="Rename the selected session", id="picker.rename"),
        Binding(
            "A",
            "archive",
            "archive",
            tooltip="Archive the selected session (or bring it back)",
            id="picker.archive",
        ),
        Binding(
            "delete",
            "delete",
            "delete",
            tooltip="Delete the selected session (asked first)",
            id="picker.delete",
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
        out.append(
            PaletteCommand(
                "Delete the selected session with its kept variants' refs (asked first)",
                "gpuopt session delete --with-refs",
                partial(self.action_delete, True),
                words="delete remove session refs",
            )
        )
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

    # ------------------------------------------------------------------ managing sessions

    def _selected(self) -> dict[str, Any] | None:
        t = self.query_one(DataTable)
        if not t.row_count:
            return None
        key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
        return next((r for r in self._rows if r["id"] == key), None)

    def _writable(self) -> bool:
        app: Any = self.app
        if app.ledger.readonly:
            self.notify("Read-only: nothing is written in review mode.", severity="warning")
            return False
        return True

    def _managed(self, what: str, call: Any) -> None:
        """Run one of session.manage's calls; a refusal is shown in its own words."""
        try:
            done = call()
        except GpuoptError as exc:
            self.app.push_screen(ErrorModal(f"Not {what}", str(getattr(exc, "reason", exc))))
            return
        self.refresh_rows()
        self.notify(done, markup=False)

    def action_rename(self) -> None:
        row = self._selected()
        if row is None or not self._writable():
            return
        app: Any = self.app
        sid = row["id"]

        def submit(vals: dict[str, Any]) -> str:
            return str(Session(app.ledger, sid).rename(vals["title"]).value.title)

        def renamed(title: str | None) -> None:
            if title is not None:
                self.refresh_rows()
                self.notify(f"Renamed to {plain(title, 200)}.", markup=False)

        field = Field("title", "Title", row["title"])
        self.app.push_screen(FormModal("Rename the session", [field], submit), renamed)

    def action_archive(self) -> None:
        row = self._selected()
        if row is None or not self._writable():
            return
        app: Any = self.app
        api = Session(app.ledger, row["id"])
        session = api.stored()
        back = bool(getattr(session, "archived", False))

        def archive() -> str:
            api.archive(archived=not back)
            if back:
                return "Brought back from the archive."
            return "Archived: kept whole, listed apart (A again brings it back)."

        self._managed("archived", archive)

    def action_delete(self, with_refs: bool = False) -> None:
        row = self._selected()
        if row is None or not self._writable():
            return
        app: Any = self.app
        sid, title = row["id"], plain(row["title"], 80)

        def answered(yes: bool | None) -> None:
            if yes:
                self._managed(
                    "deleted", lambda: deleted_words(api.delete(with_refs=with_refs).value)
                )

        api = Session(app.ledger, sid)
        refs = (
            "Its kept variants' snapshot refs go too."
            if with_refs
            else "The snapshots of its kept variants stay in the repository (the palette's "
            "'delete … with its refs' removes them too)."
        )

        self.app.push_screen(
            ConfirmModal(f"Delete the session {title} ({sid[:8]}) and every row of it? {refs}"),
            answered,
        )

    def action_help(self) -> None:
        self.app.push_screen(
            HelpModal("Sessions", self._guidance(), bindings_help(self.app), glossary())
        )

    def _guidance(self) -> str:
        return picker_guidance(key_of_id(self.app, list(self.BINDINGS), "picker.new"))  # type: ignore[arg-type]

    def compose(self) -> ComposeResult:
        yield Static("", id="title-bar")
        yield Static(self._guidance(), classes="guidance")
        yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
        yield Static("", id="empty", classes="guidance")
        yield SteadyFooter()

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
        rows = session_rows(app.ledger)
        self._rows = rows
        title_w, repo_w = fit_widths(self.app.size.width)
        for r in rows:
            t.add_row(  # stored text: shown literally, never read as markup
                cell(r["id"][:8]),
                cell(r["title"], title_w, brief=True, length=r.get("title_length")),
                cell(r["repo"].rstrip("/").rsplit("/", 1)[-1], repo_w, brief=True),
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

    def on_resize(self) -> None:
        if self.query_one(DataTable).columns:  # the columns are made on mount
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


OTHER_COLUMNS = 8 + 16 + 3 + 3 + 6 + 2 * 7  # id, created, the counts, the cell padding


def fit_widths(width: int) -> tuple[int, int]:
    """Title and repository widths that keep every column on screen (the title gives way
    first, with an ellipsis; both stay readable)."""
    room = max(width - OTHER_COLUMNS, 24)
    repo_w = max(min(room // 3, 24), 10)
    return max(room - repo_w, 14), repo_w
