"""The variants a round measures: all of the session's, or those named (by name or id)."""

from __future__ import annotations

from collections.abc import Sequence

from ledger import LedgerError
from session import models as m
from session.errors import BadInput, GateRefused
from session.ledger_port import LedgerLike

__all__ = ["resolve_variants"]


def resolve_variants(
    ledger: LedgerLike, session: m.Session, refs: Sequence[str] | None
) -> list[m.Variant]:
    if not refs:
        found = ledger.list(m.Variant, session_id=session.id)
        if not found:
            raise GateRefused("no variants to measure: add one with `gpuopt variant add`")
        return list(found)
    out: list[m.Variant] = []
    for ref in refs:
        try:
            v = ledger.variant(session.id, ref.strip())
        except LedgerError as exc:
            raise BadInput(str(exc)) from None
        if v.id not in {x.id for x in out}:
            out.append(v)
    return out
