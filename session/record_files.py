"""Where the app writes a decision record, and how: markdown and JSON side by side, each
replaced whole (never a half-written record), in the user data directory unless told."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import platformdirs

from session import models as m
from session.record import SessionExport, gather, to_json, to_markdown


def default_export_dir() -> Path:
    """Where records go unless told: the user data directory, never the user's repository."""
    return Path(platformdirs.user_data_dir("gpuopt", appauthor=False)) / "records"


def export_writing_words(target: str | Path) -> str:
    """What the app says the moment an export starts."""
    return f"Writing the record to {target} …"


def export_written_words(path: str | Path) -> str:
    """What the app says once the record is written: the path on a line of its own, so a
    narrow view breaks the sentence, never the path a person copies."""
    return f"Record written (markdown, with its .json beside it):\n{path}"


def export_failed_words(error: str) -> str:
    """What the app says when the record could not be written."""
    return f"The record was not written: {error}"


def record_markdown(ledger: Any, session: m.Session, view: Any = None) -> str:
    """The markdown record; with `view` (a SessionView already read) it is not read again."""
    return to_markdown(gather(ledger, session, view))


def record_model(ledger: Any, session: m.Session, view: Any = None) -> SessionExport:
    """The record read once, to be laid out (`record_for_width`) as often as a view resizes."""
    return gather(ledger, session, view)


def record_for_width(record: SessionExport, width: int) -> str:
    """The record as a terminal view `width` columns wide shows it: the summary first in
    its narrow table, and every table wider than the view one line per row (the file
    keeps every table whole)."""
    return to_markdown(record, fit=width)


def export_record(ledger: Any, session: m.Session, directory: str | Path) -> Path:
    """Write the decision record (markdown and JSON) beside each other; returns the .md path."""
    out = Path(directory).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    data = gather(ledger, session, folder=out)  # a roofline picture may go beside it
    stem = f"gpuopt-{session.id}"
    md = out / f"{stem}.md"
    for path, text in ((md, to_markdown(data)), (out / f"{stem}.json", to_json(data))):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return md
