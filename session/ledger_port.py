"""What the session layer needs of a ledger, named: `LedgerLike`.

The session modules take their ledger as a `LedgerLike`, so a reader sees at the head of
each function what it may do to the store, and mypy holds `ledger.store.Ledger` to the same
shape (the check at the foot of this module). Nothing here runs: it is types only.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from session import models as m

if TYPE_CHECKING:  # types only: the store's module opens SQLite machinery
    from ledger.store import Ledger, UnreadableRow, Versioned

__all__ = ["LedgerLike"]

T = TypeVar("T", bound=BaseModel)


@runtime_checkable
class LedgerLike(Protocol):
    """Reads and writes of records (pydantic models), keyed as the ledger's tables are."""

    # Rows met by `list()` that did not validate: shown to the person, not fatal.
    unreadable: builtins.list[UnreadableRow]

    @property
    def path(self) -> Path: ...

    def write(self) -> AbstractContextManager[Any]:
        """One transaction: writes inside it land together or not at all."""
        ...

    def put(self, *items: BaseModel) -> None: ...

    def get(self, cls: type[T], key: str | tuple[str, ...]) -> T | None: ...

    def get_versioned(self, cls: type[T], key: str | tuple[str, ...]) -> Versioned[T] | None: ...

    def put_if_unchanged(self, item: T, read: Versioned[T]) -> Versioned[T]: ...

    def list(self, cls: type[T], order_by: str = "rowid", **where: Any) -> builtins.list[T]: ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[dict[str, Any]]: ...

    def variant(self, session_id: str, ref: str) -> m.Variant: ...

    def latest_baseline(self, session_id: str) -> m.Baseline | None: ...

    def search_hypotheses(
        self, text: str, limit: int = 10, **where: Any
    ) -> builtins.list[m.Hypothesis]: ...


if TYPE_CHECKING:

    def _the_ledger_is_ledger_like(ledger: Ledger) -> LedgerLike:
        return ledger  # mypy says here if the store drifts from the port
