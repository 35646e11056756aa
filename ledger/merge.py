"""Merging ledgers: the rows of other boxes' ledgers brought into one, by their keys.

Every entity row is keyed by a UUID (or, for preflight answers and checklist items, by its
session and its fixed question or item number), so rows from several ledgers meet only
where they are the same record. A row the target lacks is copied as it was written (its
stored JSON and its version); a row the target holds with the same content is left alone;
a row the target holds with different content is a conflict: reported, never overwritten.
Nothing is renumbered: a round keeps its number, and two rounds of one session that carry
the same number (a session continued on two boxes) are both kept and reported.

Bisections (m003_bisections) merge by their id like the rest: the same bisection finished
on one box and left running on another is a conflict, reported, the target's kept.

Telemetry batches have a local integer id that nothing refers to: a batch is the same
batch when its run, its times, its count and its samples are the same.

Each source is merged in one BEGIN IMMEDIATE transaction of the target, so a merge that
fails leaves the target as it was; merging the same ledger again changes nothing.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ledger.store import TABLES, Ledger

__all__ = ["MERGE_ORDER", "Conflict", "MergeReport", "merge_into"]

# Parents before children: the ledger's foreign keys are on while we insert.
MERGE_ORDER = (
    "sessions", "baselines", "hypotheses", "hypothesis_events", "variants", "evidence",
    "preflight", "checklist", "rounds", "runs", "hooks", "audits", "correctness",
    "comparisons", "residuals", "dispositions", "bisections",
)  # fmt: skip

_MODELS: dict[str, type[BaseModel]] = {t.name: cls for cls, t in TABLES.items()}
_KEYS: dict[str, tuple[str, ...]] = {t.name: t.key for t in TABLES.values()}
_KEYS["checklist"] = ("session_id", "number")
# A bisection names its session without a foreign key (m003_bisections): keyed by its id.
_KEYS["bisections"] = ("id",)
_TELEMETRY_MATCH = (
    "SELECT 1 FROM telemetry_batches WHERE session_id IS ? AND run_id IS ? AND t_first = ? "
    "AND t_last = ? AND n = ? AND samples = ? LIMIT 1"
)


@dataclass(frozen=True)
class Conflict:
    """One record both ledgers hold, with different content: the target's is kept."""

    table: str
    key: tuple[Any, ...]
    fields: list[str]  # the top-level fields that differ ("" when not a JSON record)
    other: bool = False  # another record of the target holds these unique fields

    def __str__(self) -> str:
        what = ", ".join(self.fields) or "content"
        where = f"{self.table} {'/'.join(map(str, self.key))}"
        if self.other:
            one = self.table.removesuffix("s")
            return f"{where}: another {one} of the target has the same {what}; not copied"
        return f"{where}: differs ({what}); kept the target's"


@dataclass
class MergeReport:
    source: str
    added: dict[str, int] = field(default_factory=dict)  # table -> rows copied in
    same: dict[str, int] = field(default_factory=dict)  # table -> rows already there, equal
    conflicts: list[Conflict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # rows not copied, with why
    notes: list[str] = field(default_factory=list)  # kept, but worth a look (round numbers)

    @property
    def changed(self) -> bool:
        return any(self.added.values())


def _content(table: str, row: dict[str, Any]) -> Any:
    """What a row says, for comparison: its record's JSON, parsed (formatting aside), or its
    non-key columns where the table holds no record."""
    if "data" in row:
        try:
            return json.loads(row["data"])
        except (TypeError, ValueError):
            return row["data"]
    return {k: v for k, v in row.items() if k not in _KEYS[table] and k != "version"}


def _differing(a: Any, b: Any) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    return []


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _validated_columns(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """The row as the target stores it: the columns its record defines, recomputed from the
    record itself (a source whose columns disagree with its JSON cannot mislead listings)."""
    cls = _MODELS.get(table)
    if cls is None:
        return {k: v for k, v in row.items() if k != "rowid"}
    item = cls.model_validate_json(row["data"])
    out = TABLES[cls].columns(item)
    out["data"] = row["data"]
    if row.get("version") is not None:
        out["version"] = row["version"]
    return out


def _merge_table(
    source: Ledger, target: sqlite3.Connection, table: str, report: MergeReport
) -> None:
    if not _columns(source._c.conn, table):  # an older gpuopt's ledger: no such table
        return
    keys = _KEYS[table]
    where = " AND ".join(f"{k} = ?" for k in keys)
    target_columns = set(_columns(target, table))
    names, rows = source._c.fetch_named(f"SELECT rowid, * FROM {table} ORDER BY rowid")
    for values in rows:
        row = dict(zip(names, values, strict=True))
        key = tuple(row[k] for k in keys)
        mine = target.execute(f"SELECT * FROM {table} WHERE {where}", key)
        found = mine.fetchone()
        if found is not None:
            theirs = dict(zip([d[0] for d in mine.description], found, strict=True))
            a, b = _content(table, theirs), _content(table, row)
            if a == b:
                report.same[table] = report.same.get(table, 0) + 1
            else:
                report.conflicts.append(Conflict(table, key, _differing(a, b)))
            continue
        try:
            stored = _validated_columns(table, row)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            report.skipped.append(f"{table} {'/'.join(map(str, key))}: unreadable ({first})")
            continue
        stored = {k: v for k, v in stored.items() if k in target_columns}
        cols = ", ".join(stored)
        marks = ", ".join("?" * len(stored))
        try:
            target.execute("SAVEPOINT merge_row")
            target.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(stored.values()))
            target.execute("RELEASE merge_row")
        except sqlite3.IntegrityError as exc:
            target.execute("ROLLBACK TO merge_row")
            target.execute("RELEASE merge_row")
            said = str(exc)
            if said.startswith("UNIQUE constraint failed:"):  # another record holds its name
                taken = [c.strip().split(".")[-1] for c in said.split(":", 1)[1].split(",")]
                report.conflicts.append(Conflict(table, key, taken, other=True))
            else:
                report.skipped.append(f"{table} {'/'.join(map(str, key))}: not copied ({exc})")
            continue
        report.added[table] = report.added.get(table, 0) + 1


def _merge_telemetry(source: Ledger, target: sqlite3.Connection, report: MergeReport) -> None:
    rows = source._c.fetch(
        "SELECT session_id, run_id, t_first, t_last, n, samples FROM telemetry_batches ORDER BY id"
    )
    for row in rows:
        if target.execute(_TELEMETRY_MATCH, row).fetchone() is not None:
            report.same["telemetry_batches"] = report.same.get("telemetry_batches", 0) + 1
            continue
        target.execute(
            "INSERT INTO telemetry_batches (session_id, run_id, t_first, t_last, n, samples) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            row,
        )
        report.added["telemetry_batches"] = report.added.get("telemetry_batches", 0) + 1


def _number_clashes(target: sqlite3.Connection) -> list[str]:
    """Sessions holding two rounds of one number: kept both (nothing is renumbered)."""
    return [
        f"session {sid}: {n} rounds numbered {number} (from different boxes; both kept, "
        "told apart by their ids)"
        for sid, number, n in target.execute(
            "SELECT session_id, number, COUNT(*) FROM rounds GROUP BY session_id, number "
            "HAVING COUNT(*) > 1 ORDER BY session_id, number"
        )
    ]


class _DryRun(Exception):
    """Raised inside the transaction to roll a dry run back."""


def merge_into(target: Ledger, source: Ledger, *, dry_run: bool = False) -> MergeReport:
    """Bring every row of `source` that `target` lacks into `target`, in one transaction."""
    report = MergeReport(source=str(source.path))
    before = set(_number_clashes(target._c.conn))
    try:
        with target.write():
            conn = target._c.conn
            for table in MERGE_ORDER:
                _merge_table(source, conn, table, report)
            _merge_telemetry(source, conn, report)
            report.notes = [c for c in _number_clashes(conn) if c not in before]
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass
    return report
