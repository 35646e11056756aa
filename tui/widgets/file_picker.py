"""Pick a file from a folder tree (a patch for a variant): arrows move, enter opens a folder
or picks a file, escape goes back without one."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DirectoryTree, Label, Static

from tui.display import plain

PATCH_SUFFIXES = (".patch", ".diff")


class PatchTree(DirectoryTree):
    """Folders and patch files only; hidden folders (.git) left out."""

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        return [
            p
            for p in paths
            if not p.name.startswith(".") and (p.is_dir() or p.suffix.lower() in PATCH_SUFFIXES)
        ]


class FilePicker(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "back", id="picker_file.cancel")]

    def __init__(self, root: str | Path, title: str = "Choose a patch file") -> None:
        super().__init__()
        self.root = Path(root)
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="form-dialog"):
            yield Label(Text(self.title_text, style="bold"), id="dialog-title")
            yield Static(Text(plain(str(self.root), 200), style="dim"), id="dialog-note")
            yield PatchTree(self.root, id="file-tree")
            yield Static("[b]enter[/] pick · [b]esc[/] back", classes="dialog-keys")

    def on_mount(self) -> None:
        self.query_one(PatchTree).focus()

    def on_directory_tree_file_selected(self, event: DirectoryTree.FileSelected) -> None:
        event.stop()
        self.dismiss(str(event.path))

    def action_cancel(self) -> None:
        self.dismiss(None)
