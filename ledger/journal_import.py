"""Bringing a job's journal into the ledger: each line once, whatever crashed where.

A journal (measure.journal) holds the records a job wrote, as JSON lines: `row` lines
carry one record (its model's name and JSON), `samples` lines a batch of telemetry. The
byte offset up to which a journal is imported is kept in the ledger's `meta` table and
moved in the same BEGIN IMMEDIATE transaction as the rows it covers: a crash before the
commit imports those lines again, a crash after never does, and two importers at once
take each line once between them. The rows are keyed by their UUIDs and applied as their
latest line says (a record written again, such as a round at each look, is the same row),
so even a journal read again from its start changes nothing.

The `meta` table also lists the jobs this ledger submitted (`slurm-job:<id>`), so a
login-side process that died can be followed again.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ledger.store import TABLES, Ledger

__all__ = [
    "ImportReport",
    "forget_round",
    "import_entries",
    "imported_offset",
    "job_record",
    "jobs",
    "put_job",
    "slim_seed",
]

_BY_NAME: dict[str, type[BaseModel]] = {cls.__name__: cls for cls in TABLES}
_OFFSET = "journal-offset:"
_JOB = "slurm-job:"
_TELEMETRY_MATCH = (
    "SELECT 1 FROM telemetry_batches WHERE session_id IS ? AND run_id IS ? AND t_first = ? "
    "AND t_last = ? AND n = ? AND samples = ? LIMIT 1"
)


@dataclass
class ImportReport:
    lines: int = 0  # new lines taken
    added: int = 0  # rows the ledger did not have
    updated: int = 0  # rows a later line changed
    same: int = 0  # rows already as the journal says
    samples: int = 0
    skipped: list[str] = field(default_factory=list)  # lines that could not be applied
    offset: int = 0  # imported up to here


def _meta(ledger: Ledger, key: str) -> str | None:
    rows = ledger.query("SELECT value FROM meta WHERE key = ?", (key,))
    return rows[0]["value"] if rows else None


def _set_meta(ledger: Ledger, key: str, value: str) -> None:
    ledger._c.conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def imported_offset(ledger: Ledger, journal_id: str) -> int:
    value = _meta(ledger, _OFFSET + journal_id)
    return int(value) if value else 0


def _key(cls: type[BaseModel], item: BaseModel) -> tuple[Any, ...]:
    table = TABLES[cls]
    columns = table.columns(item)
    return tuple(columns[k] for k in table.key)


def _apply_rows(ledger: Ledger, rows: list[dict[str, Any]], report: ImportReport) -> None:
    # Latest content per record, in the order records first appeared (parents first).
    latest: dict[tuple[str, tuple[Any, ...]], BaseModel] = {}
    for entry in rows:
        cls = _BY_NAME.get(str(entry.get("model")))
        if cls is None:
            report.skipped.append(f"line {entry.get('seq')}: no such record {entry.get('model')}")
            continue
        try:
            item = cls.model_validate(entry.get("data"))
        except ValueError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            report.skipped.append(f"line {entry.get('seq')}: unreadable {cls.__name__} ({first})")
            continue
        latest[(cls.__name__, _key(cls, item))] = item  # a dict keeps the first position
    for (name, key), item in latest.items():
        stored = ledger.get(_BY_NAME[name], key if len(key) > 1 else key[0])
        if stored == item:
            report.same += 1
            continue
        ledger.put(item)
        if stored is None:
            report.added += 1
        else:
            report.updated += 1


def _apply_samples(ledger: Ledger, batches: list[dict[str, Any]], report: ImportReport) -> None:
    conn = ledger._c.conn
    for entry in batches:
        samples = entry.get("samples") or []
        groups: dict[tuple[Any, Any], list[list[Any]]] = {}
        for s in samples:
            groups.setdefault((s[0], s[1]), []).append(s[2:])
        for (sid, run), values in groups.items():
            packed = json.dumps(values, separators=(",", ":"))
            row = (sid, run, min(v[0] for v in values), max(v[0] for v in values),
                   len(values), packed)  # fmt: skip
            if conn.execute(_TELEMETRY_MATCH, row).fetchone() is not None:
                continue
            conn.execute(
                "INSERT INTO telemetry_batches (session_id, run_id, t_first, t_last, n, samples)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                row,
            )
            report.samples += len(values)


def import_entries(
    ledger: Ledger, journal_id: str, entries: list[tuple[dict[str, Any], int]]
) -> ImportReport:
    """Apply the journal lines (each with the offset just past it) not yet imported, and
    move the journal's offset, in one transaction."""
    report = ImportReport()
    with ledger.write():
        done = imported_offset(ledger, journal_id)
        fresh = [(e, end) for e, end in entries if end > done and e.get("journal") == journal_id]
        report.offset = max([done, *(end for _, end in fresh)])
        report.lines = len(fresh)
        _apply_rows(ledger, [e for e, _ in fresh if e.get("kind") == "row"], report)
        _apply_samples(ledger, [e for e, _ in fresh if e.get("kind") == "samples"], report)
        if report.offset != done:
            _set_meta(ledger, _OFFSET + journal_id, str(report.offset))
    return report


def put_job(ledger: Ledger, job_uuid: str, record: dict[str, Any]) -> None:
    """Record (or update) a job this ledger submitted."""
    with ledger.write():
        current = job_record(ledger, job_uuid) or {}
        _set_meta(ledger, _JOB + job_uuid, json.dumps({**current, **record}, default=str))


def job_record(ledger: Ledger, job_uuid: str) -> dict[str, Any] | None:
    value = _meta(ledger, _JOB + job_uuid)
    return json.loads(value) if value else None


def jobs(ledger: Ledger) -> list[dict[str, Any]]:
    """Every job recorded, oldest first, each with its `uuid`."""
    rows = ledger.query(
        "SELECT key, value FROM meta WHERE key >= ? AND key < ? ORDER BY rowid",
        (_JOB, _JOB[:-1] + ";"),
    )
    return [{"uuid": r["key"][len(_JOB) :], **json.loads(r["value"])} for r in rows]


def forget_round(ledger: Ledger, round_id: str) -> None:
    """Delete a round that holds nothing yet (no run, comparison or hook): the placeholder
    a login side numbered, from the job's own copy, so the job records it afresh."""
    with ledger.write():
        conn = ledger._c.conn
        for table in ("runs", "comparisons", "hooks"):
            if conn.execute(f"SELECT 1 FROM {table} WHERE round_id = ?", (round_id,)).fetchone():
                raise ValueError(f"round {round_id} already holds {table}: not a placeholder")
        conn.execute("DELETE FROM rounds WHERE id = ?", (round_id,))


def slim_seed(path: Path) -> None:
    """A job's copy of the ledger without its telemetry (the bulk of a ledger, which no
    baseline or round reads back), compacted: what the node copies is the records only.
    The copy is a file of its own that nothing else has open."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("DELETE FROM telemetry_batches")
        conn.execute("VACUUM")
    finally:
        conn.close()
