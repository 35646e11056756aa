"""A session's own management from inside it: rename, archive, delete and export to a
folder, as palette commands (what `gpuopt session rename|archive|delete` and `gpuopt
export -o` do), each through the session API; the words a delete leaves are said here
once for the picker and the session screen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from session.api import DeleteReport, GpuoptError, default_export_dir, export_written_words
from tui.display import plain
from tui.screens.modals import ConfirmModal, ErrorModal, FormModal
from tui.widgets.form import Field
from tui.widgets.palette import PaletteCommand
from tui.widgets.words import count


def deleted_words(report: DeleteReport) -> str:
    """What a delete removed and kept, in one notice."""
    rows = sum(report.rows.values())
    parts = [f"Deleted {plain(report.title, 80)}: {count(rows, 'row')}"]
    if report.refs_removed:
        parts.append(f"{count(len(report.refs_removed), 'snapshot ref')} removed")
    if report.refs_kept:
        pinned = ", ".join(sorted(report.kept_as.values()))
        parts.append(
            f"{count(len(report.refs_kept), 'kept variant snapshot')} left in place"
            + (f", pinned as {pinned} (prune-refs never removes it)" if pinned else "")
        )
    if report.refs_left:
        parts.append(f"{count(len(report.refs_left), 'ref')} could not be removed")
    return "; ".join(parts) + "."


def export_dir(app: Any) -> Path:
    """Where the app writes decision records now (the last folder chosen, else the default)."""
    return Path(getattr(app, "export_dir", None) or default_export_dir())


def manage_commands(screen: Any) -> list[PaletteCommand]:
    """The palette entries of a session screen that manage the session itself."""
    if screen.view is None:
        return []
    out = [
        PaletteCommand(
            "Export the record to a folder…",
            f"Record · now {plain(export_dir(screen.app), 60)} (gpuopt export -o)",
            lambda: ask_export(screen),
            words="export record folder directory path markdown json save",
        )
    ]
    if screen.readonly:
        return out
    archived = bool(getattr(screen.view.session, "archived", False))
    out += [
        PaletteCommand(
            "Rename this session",
            "gpuopt session rename",
            lambda: ask_rename(screen),
            words="rename title session",
        ),
        PaletteCommand(
            "Bring this session back from the archive" if archived else "Archive this session",
            "gpuopt session archive" + (" --undo" if archived else ""),
            lambda: archive(screen, not archived),
            words="archive session",
        ),
        PaletteCommand(
            "Delete this session (asked first)",
            "gpuopt session delete",
            lambda: ask_delete(screen, with_refs=False),
            words="delete remove session",
        ),
        PaletteCommand(
            "Delete this session and its kept variants' refs (asked first)",
            "gpuopt session delete --with-refs",
            lambda: ask_delete(screen, with_refs=True),
            words="delete remove session refs",
        ),
    ]
    return out


def ask_export(screen: Any) -> None:
    """The folder to write the record into (markdown and JSON), then written at once."""
    view = screen.view
    if view is None:
        return
    field = Field("directory", "Folder of records", str(export_dir(screen.app)))

    def submit(vals: dict[str, Any]) -> str:
        folder = Path(vals["directory"].strip() or export_dir(screen.app)).expanduser()
        path = screen.api.export(view.session, folder).value
        screen.app.export_dir = str(folder)  # x writes there too from now on
        return str(path)

    def written(path: str | None) -> None:
        if path is not None:
            screen.app.exported = path
            screen.notify(plain(export_written_words(path), None, multiline=True), markup=False)

    screen.app.push_screen(
        FormModal("Export the decision record", [field], submit, note="markdown and JSON"),
        written,
    )


def ask_rename(screen: Any) -> None:
    view = screen.view
    if view is None or not screen.guard():
        return
    field = Field("title", "Title", view.session.title)

    def submit(vals: dict[str, Any]) -> str:
        return str(screen.api.rename(vals["title"]).value.title)

    def renamed(title: str | None) -> None:
        if title is not None:
            screen.reload()
            screen.notify(f"Renamed to {plain(title, 200)}.", markup=False)

    screen.app.push_screen(FormModal("Rename the session", [field], submit), renamed)


def archive(screen: Any, archived: bool) -> None:
    if screen.view is None or not screen.guard():
        return
    try:
        screen.api.archive(archived=archived)
    except GpuoptError as exc:
        screen.app.push_screen(ErrorModal("Not archived", str(getattr(exc, "reason", exc))))
        return
    screen.reload()
    screen.notify(
        "Archived: kept whole, listed apart." if archived else "Brought back from the archive.",
        markup=False,
    )


def ask_delete(screen: Any, *, with_refs: bool) -> None:
    """Asked first; once deleted, back to the session list with what went and what stayed."""
    view = screen.view
    if view is None or not screen.guard() or screen.busy:
        return
    title, sid = plain(view.session.title, 80), view.session.id
    refs = (
        "its kept variants' snapshot refs go too"
        if with_refs
        else "the snapshots of its kept variants stay in the repository"
    )

    def answered(yes: bool | None) -> None:
        if not yes:
            return
        try:
            report = screen.api.delete(with_refs=with_refs).value
        except GpuoptError as exc:
            screen.app.push_screen(ErrorModal("Not deleted", str(getattr(exc, "reason", exc))))
            return
        screen.app.notify(deleted_words(report), markup=False)
        screen.leave_deleted()

    screen.app.push_screen(
        ConfirmModal(f"Delete the session {title} ({sid[:8]}) and every row of it? {refs}."),
        answered,
    )
