"""Field-level writes of a stored record: a change lands on the newest row or is refused.

Two people (two shells, or a shell and the app) may edit one record at once. Each edit
names the fields it changes and the version of the record it was made from (`read`).
Inside one write transaction the newest row is read again and

- a field only this edit changed is set on the newest row (the other writer's fields stay);
- a field someone else changed since `read` to another value refuses the whole edit with
  `EditConflict`, which names the field and its stored value; nothing is written.

The history items (`extra`) are written in the same transaction as the row, computed from
the row they change, so the history and the row always agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from session.errors import BadInput
from session.ledger_port import LedgerLike

T = TypeVar("T", bound=BaseModel)

Extra = Callable[[T, T, list[str]], Sequence[BaseModel]]


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(str(getattr(v, "value", v)) for v in value) + "]"
    return repr(getattr(value, "value", value))


class EditConflict(BadInput):
    """The same field was changed elsewhere since the record was read; nothing written.

    `.current` is the stored record, `.changed_fields` the clashing fields (the shape of
    ledger.store.ConflictError, so a front end shows both alike)."""

    def __init__(self, what: str, current: BaseModel, changed_fields: list[str]):
        self.current = current
        self.changed_fields = changed_fields
        now = "; ".join(f"{f} is now {_shown(getattr(current, f))}" for f in changed_fields)
        super().__init__(
            f"this {what} was changed elsewhere since it was read ({now}); nothing was "
            "written: read it again and repeat the edit if it still applies"
        )


def _validated(cls: type[T], data: Mapping[str, Any]) -> T:
    try:
        return cls.model_validate(dict(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or cls.__name__.lower()
        raise BadInput(f"{where}: {first['msg'].removeprefix('Value error, ')}") from None


def write_fields(
    ledger: LedgerLike,
    what: str,
    read: T,
    key: str | tuple[str, ...],
    changes: Mapping[str, Any],
    extra: Extra[T] | None = None,
    *,
    stamp: Mapping[str, Any] | None = None,
) -> T:
    """Set `changes` on the newest stored version of the record `read` came from.

    `read` is the version the edit was made from (None-less: for a record not stored yet
    it is the record to create). Returns the record as stored; raises EditConflict when a
    changed field was changed elsewhere to another value, BadInput when the result is not
    a valid record. `extra(current, updated, changed)` gives the rows (history) written
    with it; it is not called when nothing changes. `stamp` (e.g. an updated-at time) is
    set whenever something changes, never a clash."""
    cls = type(read)
    mine = _validated(cls, {**read.model_dump(), **changes})
    names = [n for n in changes if n in cls.model_fields]
    with ledger.write():
        current = ledger.get(cls, key)
        if current is None:
            current = read
            stored_before = False
        else:
            stored_before = True
        clash = [
            n
            for n in names
            if getattr(current, n) != getattr(read, n) and getattr(current, n) != getattr(mine, n)
        ]
        if clash:
            raise EditConflict(what, current, clash)
        updated = _validated(cls, {**current.model_dump(), **{n: getattr(mine, n) for n in names}})
        changed = [n for n in names if getattr(updated, n) != getattr(current, n)]
        if not changed and stored_before:
            return current
        if stamp:
            updated = _validated(cls, {**updated.model_dump(), **stamp})
        ledger.put(updated, *(extra(current, updated, changed) if extra else ()))
    return updated
