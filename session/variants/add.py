"""Adding a variant while other gpuopt processes write the same session.

`snapshot.add_variant` checks that the name is free, snapshots, then writes; a second
process can take the name in between. The loser is told so, and a variant that is not
recorded leaves no snapshot ref in the person's repository.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from measure.git import unpin_on_failure
from session import models as m
from session.errors import BadInput, ConductError
from session.ledger_port import LedgerLike
from session.variants import snapshot

__all__ = ["add_variant"]


def add_variant(ledger: LedgerLike, session: m.Session, name: str, **how: Any) -> m.Variant:
    """snapshot.add_variant, with the refs it pinned deleted when it fails (Ctrl+C too) and
    a lost race on the name said as such (BadInput)."""
    try:
        with unpin_on_failure():
            return snapshot.add_variant(ledger, session, name, **how)
    except sqlite3.IntegrityError as exc:
        taken = any(v.name == name for v in ledger.list(m.Variant, session_id=session.id))
        if taken:
            raise BadInput(
                f"another gpuopt process added a variant named {name!r} to session "
                f"{session.id} first; this one was not recorded and its snapshot ref was "
                "removed (choose another --name)"
            ) from None
        raise ConductError(
            f"the variant was not recorded: the ledger refused it ({exc}); another process "
            "may have changed the session meanwhile, and its snapshot ref was removed"
        ) from None
