"""A ledger on the compute node that also journals every record it stores.

The job measures against a private copy of the ledger on the node's local disk (SQLite
is safe there), so the conductor's code runs unchanged; every record it stores, and
every telemetry batch, is also appended to the job's journal on shared storage, which
the login node imports. A record written inside a transaction is journaled when that
transaction commits, never before: a rolled-back write never reaches the journal.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from ledger import Ledger
from ledger.store import Versioned
from measure.journal import JournalWriter
from session import models as m

__all__ = ["JournalingLedger"]

T = TypeVar("T", bound=BaseModel)


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


class JournalingLedger:
    """A `LedgerLike`: reads from the node's copy, writes to it and to the journal.

    `stamp` is set on every run stored (node, job id, GPU UUID and driver), so each run
    says where it ran."""

    def __init__(
        self,
        inner: Ledger,
        journal: JournalWriter,
        stamp: dict[str, str],
        job: dict[str, str] | None = None,
    ):
        self.inner = inner
        self.journal = journal
        self.stamp = stamp
        self.job = job or {}  # a round's summary names its job: {"job", "job_id", "node"}
        self.unreadable = inner.unreadable
        self._depth = 0
        self._held: list[BaseModel] = []

    @property
    def path(self) -> Path:
        return self.inner.path

    @contextmanager
    def write(self) -> Iterator[Any]:
        self._depth += 1
        mark = len(self._held)
        try:
            with self.inner.write() as db:
                yield db
        except BaseException:
            del self._held[mark:]  # rolled back: never journaled
            raise
        finally:
            self._depth -= 1
        if self._depth == 0:
            held, self._held = self._held, []
            self._journal(held)

    def _journal(self, items: Sequence[BaseModel]) -> None:
        """One line per record, the transaction's lines made durable together."""
        if items:
            self.journal.write_many(
                [("row", {"model": type(i).__name__, "data": i.model_dump(mode="json")})
                 for i in items]
            )  # fmt: skip

    def _stamped(self, items: Sequence[BaseModel]) -> list[BaseModel]:
        for item in items:  # what the run itself says (its GPU's UUID from telemetry) wins
            if isinstance(item, m.Run) and not set(self.stamp) <= set(item.place):
                item.place = {**self.stamp, **item.place}
            elif isinstance(item, m.Round) and self.job and "slurm" not in item.summary:
                item.summary = {**item.summary, "slurm": dict(self.job)}
        return list(items)

    def put(self, *items: BaseModel) -> None:
        stamped = self._stamped(items)
        with self.write():
            self.inner.put(*stamped)
            self._held.extend(i.model_copy(deep=True) for i in stamped)

    def put_if_unchanged(self, item: T, read: Versioned[T]) -> Versioned[T]:
        self._stamped([item])
        with self.write():
            stored = self.inner.put_if_unchanged(item, read)
            self._held.append(item.model_copy(deep=True))
        return stored

    def insert_samples(self, samples: Any) -> int:
        rows = [
            [_finite(v) for v in s]
            if isinstance(s, tuple)
            else [s.session_id, *(_finite(getattr(s, c)) for c in _SAMPLE_FIELDS)]
            for s in samples
        ]
        if rows:
            self.journal.write("samples", samples=rows)
        return len(rows)

    # Reads: the node's copy.
    def get(self, cls: type[T], key: str | tuple[str, ...]) -> T | None:
        return self.inner.get(cls, key)

    def get_versioned(self, cls: type[T], key: str | tuple[str, ...]) -> Versioned[T] | None:
        return self.inner.get_versioned(cls, key)

    def list(self, cls: type[T], order_by: str = "rowid", **where: Any) -> builtins.list[T]:
        return self.inner.list(cls, order_by, **where)

    def query(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[dict[str, Any]]:
        return self.inner.query(sql, params)

    def variant(self, session_id: str, ref: str) -> m.Variant:
        return self.inner.variant(session_id, ref)

    def latest_baseline(self, session_id: str) -> m.Baseline | None:
        return self.inner.latest_baseline(session_id)

    def search_hypotheses(
        self, text: str, limit: int = 10, **where: Any
    ) -> builtins.list[m.Hypothesis]:
        return self.inner.search_hypotheses(text, limit, **where)


_SAMPLE_FIELDS = tuple(n for n in m.TelemetrySample.model_fields if n != "session_id")
