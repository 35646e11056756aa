"""Whether a file is an earlier decision record of a session: `gpuopt export -o` replaces
such a file without asking, and anything else only when told to (--force)."""

from __future__ import annotations

import json
from pathlib import Path

from session.md import md_cell

READ_LIMIT = 64 * 1024 * 1024  # a record is far smaller; a bigger file is not one


def is_record_of(path: Path, session_id: str) -> bool:
    """`path` holds a markdown or JSON record that gpuopt exported for `session_id`."""
    try:
        with path.open("rb") as f:
            raw = f.read(READ_LIMIT + 1)
    except OSError:
        return False
    if len(raw) > READ_LIMIT:
        return False
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if text.startswith("# Decision record: "):
        return f"\n| session | {md_cell(session_id)} |\n" in text
    try:
        data = json.loads(text)
    except ValueError:
        return False
    session = data.get("session") if isinstance(data, dict) else None
    return isinstance(session, dict) and session.get("id") == session_id
