"""The demo's session in the app: the one it made before, resumed, or a new one that opens
with its hypotheses written, one per idea (the branches are offered by the add-variant form,
which links each new variant to the first hypothesis no variant tests yet)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from session import models as m
from session.api import Session, add_hypothesis, listing_rows
from tui.demo.flow import HYPOTHESES, demo_session
from tui.demo.settings import DEMO_TITLE


def previous_session(ledger: Any, repo: Path) -> m.Session | None:
    """The newest demo session on this repository that is not archived, if any."""
    for row in listing_rows(ledger):
        if row["title"] != DEMO_TITLE or row["repo"] != str(repo):
            continue
        session = Session(ledger).stored(row["id"])
        if session is not None and not getattr(session, "archived", False):
            return session
    return None


def start_session(
    ledger: Any, repo: Path, kind: str = "auto", *, fresh: bool = False
) -> tuple[m.Session, bool]:
    """(the session, whether it was resumed). A new one has the demo's hypotheses written,
    in the order of the branches, so each variant has its own to test."""
    if not fresh:
        found = previous_session(ledger, repo)
        if found is not None:
            return found, True
    session = demo_session(repo, kind)
    Session(ledger).save(session)
    for fields in HYPOTHESES:
        add_hypothesis(ledger, session, **fields)
    return session, False
