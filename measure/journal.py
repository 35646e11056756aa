"""An append-only journal: one JSON object per line, each flushed and fsynced as written.

What a job on a compute node writes instead of opening the ledger (SQLite over NFS is
unsafe): the login node reads it while it grows. A line is whole once its newline is on
disk; a reader takes whole lines only, so a line being written (or cut by a crash) is
read later, or never, but never half. Every line has its own UUID (`line`) and a sequence
number (`seq`), so a reader can tell a line it already took from a new one.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["JournalWriter", "read_from"]


class JournalWriter:
    """Appends lines to a journal file (created if missing), durable one by one.

    Safe to share between threads (the sampler's batches and the round's runs)."""

    def __init__(self, path: Path | str, journal_id: str) -> None:
        self.path = Path(path)
        self.journal_id = journal_id
        self._lock = threading.Lock()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._seq = _last_seq(self.path)

    def write(self, kind: str, durable: bool = True, **fields: Any) -> dict[str, Any]:
        return self.write_many([(kind, fields)], durable=durable)[0]

    def write_many(
        self, lines: list[tuple[str, dict[str, Any]]], durable: bool = True
    ) -> list[dict[str, Any]]:
        """Several lines (the records of one transaction), durable together: written in
        order, then one fsync before returning. `durable=False` (progress, which a crash
        may lose): no fsync of its own; the next durable line's fsync covers it."""
        with self._lock:
            entries = []
            chunks = []
            for kind, fields in lines:
                self._seq += 1
                entry = {"journal": self.journal_id, "seq": self._seq,
                         "line": str(uuid.uuid4()), "kind": kind, **fields}  # fmt: skip
                entries.append(entry)
                chunks.append(json.dumps(entry, separators=(",", ":"), allow_nan=False) + "\n")
            view = memoryview("".join(chunks).encode())
            while view:  # O_APPEND: each write lands at the end
                written = os.write(self._fd, view)
                view = view[written:]
            if durable:
                os.fsync(self._fd)
            return entries

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _last_seq(path: Path) -> int:
    """A writer that reopens a journal (a job requeued) numbers on from its last line."""
    last = 0
    for entry, _ in read_from(path, 0):
        last = max(last, int(entry.get("seq", 0)))
    return last


def read_from(path: Path | str, offset: int) -> Iterator[tuple[dict[str, Any], int]]:
    """The whole lines of a journal from byte `offset` on, each with the offset just past
    it. A line without its newline yet (being written, or cut by a crash) ends the read;
    a line that is not a JSON object is skipped (its offset still moves on)."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below; a generator holds it
    except FileNotFoundError:
        return
    with f:
        f.seek(offset)
        position = offset
        for raw in f:
            if not raw.endswith(b"\n"):
                return
            position += len(raw)
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if isinstance(entry, dict):
                yield entry, position
