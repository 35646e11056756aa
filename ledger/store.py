"""Reads and writes of the ledger's entities.

`Ledger.put(model)` upserts any entity and `Ledger.get / list` read it back as the same
model. Every write is one BEGIN IMMEDIATE transaction; group several with `ledger.write()`.
"""

from __future__ import annotations

import builtins
import functools
import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from ledger import reserve
from ledger.db import (
    LedgerConnection,
    LedgerError,
    default_ledger_path,
    foreign_triggers,
    open_connection,
)
from ledger.schema import PACKED_SAMPLE_COLUMNS
from measure.telemetry.backend import COLUMNS as SAMPLE_COLUMNS
from session import models as m

T = TypeVar("T", bound=BaseModel)


def _iso(value: Any) -> str:
    return value.isoformat() if value is not None else ""


@dataclass(frozen=True)
class _Table:
    name: str
    key: tuple[str, ...]
    columns: Callable[[Any], dict[str, Any]]


def _hypothesis_text(h: m.Hypothesis) -> str:
    return "\n".join(
        [h.symptom, h.mechanism, h.preconditions, h.predicted_effect, h.predicted_evidence,
         h.falsifier, h.confounders, h.reopen_when]
    )  # fmt: skip


@functools.lru_cache(maxsize=64)
def _upsert_sql(name: str, key: tuple[str, ...], columns: tuple[str, ...]) -> str:
    """An upsert, not INSERT OR REPLACE: the row keeps its rowid (the full-text index
    points at it) and no child row ever sees its parent deleted."""
    marks = ", ".join("?" * len(columns))
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
    updates += ", version = version + 1"
    return (
        f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({marks}) "
        f"ON CONFLICT({', '.join(key)}) DO UPDATE SET {updates}"
    )


TABLES: dict[type[BaseModel], _Table] = {
    m.Session: _Table(
        "sessions",
        ("id",),
        lambda s: {"id": s.id, "title": s.title, "repo": s.repo, "created_at": _iso(s.created_at)},
    ),
    m.Baseline: _Table(
        "baselines",
        ("id",),
        lambda b: {
            "id": b.id,
            "session_id": b.session_id,
            "snapshot_commit": b.snapshot.commit,
            "snapshot_ref": b.snapshot.ref,
            "reproducibility": b.reproducibility.value,
            "outcome": b.outcome.value if b.outcome is not None else None,
            "band": b.threshold,
            "created_at": _iso(b.created_at),
        },
    ),
    m.Hypothesis: _Table(
        "hypotheses",
        ("id",),
        lambda h: {
            "id": h.id,
            "session_id": h.session_id,
            "title": h.title,
            "status": h.status.value,
            "confidence": h.confidence.value,
            "search_text": _hypothesis_text(h),
            "created_at": _iso(h.created_at),
        },
    ),
    m.HypothesisEvent: _Table(
        "hypothesis_events",
        ("id",),
        lambda e: {
            "id": e.id,
            "hypothesis_id": e.hypothesis_id,
            "field": e.field,
            "from_value": e.from_value,
            "to_value": e.to_value,
            "why": e.why,
            "at": _iso(e.at),
        },
    ),
    m.Variant: _Table(
        "variants",
        ("id",),
        lambda v: {
            "id": v.id,
            "session_id": v.session_id,
            "name": v.name,
            "hypothesis_id": v.hypothesis_id,
            "kind": v.kind.value,
            "snapshot_commit": v.snapshot.commit,
            "created_at": _iso(v.created_at),
        },
    ),
    m.Evidence: _Table(
        "evidence",
        ("id",),
        lambda e: {
            "id": e.id,
            "session_id": e.session_id,
            "hypothesis_id": e.hypothesis_id,
            "variant_id": e.variant_id,
            "kind": e.kind.value,
            "created_at": _iso(e.created_at),
        },
    ),
    m.PreflightAnswer: _Table(
        "preflight",
        ("session_id", "question"),
        lambda p: {
            "session_id": p.session_id,
            "question": p.question.value,
            "kind": p.kind.value,
            "updated_at": _iso(p.updated_at),
        },
    ),
    m.Round: _Table(
        "rounds",
        ("id",),
        lambda r: {
            "id": r.id,
            "session_id": r.session_id,
            "baseline_id": r.baseline_id,
            "number": r.number,
            "status": r.status.value,
            "blocks": r.blocks,
            "started_at": _iso(r.started_at),
        },
    ),
    m.Run: _Table(
        "runs",
        ("id",),
        lambda r: {
            "id": r.id,
            "session_id": r.session_id,
            "round_id": r.round_id,
            "baseline_id": r.baseline_id,
            "arm": r.arm,
            "workload": r.workload,
            "block": r.block,
            "attempt": r.attempt,
            "warmup": int(r.warmup),
            "status": r.status.value,
            "value": r.value,
            "trust": r.trust.value,
            "started_us": r.started_us,
            "ended_us": r.ended_us,
        },
    ),
    m.HookRecord: _Table(
        "hooks",
        ("id",),
        lambda h: {
            "id": h.id,
            "session_id": h.session_id,
            "round_id": h.round_id,
            "variant_id": h.variant_id,
            "kind": h.kind.value,
            "at": _iso(h.at),
        },
    ),
    m.Audit: _Table(
        "audits",
        ("id",),
        lambda a: {
            "id": a.id,
            "session_id": a.session_id,
            "arm": a.arm,
            "workload": a.workload,
            "created_at": _iso(a.created_at),
        },
    ),
    m.CorrectnessResult: _Table(
        "correctness",
        ("id",),
        lambda c: {
            "id": c.id,
            "session_id": c.session_id,
            "variant_id": c.variant_id,
            "workload": c.workload,
            "passed": int(c.passed),
            "created_at": _iso(c.created_at),
        },
    ),
    m.Comparison: _Table(
        "comparisons",
        ("id",),
        lambda c: {
            "id": c.id,
            "round_id": c.round_id,
            "variant_id": c.variant_id,
            "workload": c.workload,
            "n": c.n,
            "ratio": c.ratio,
            "ci_low": c.ci_low,
            "ci_high": c.ci_high,
            "verdict": c.verdict.value,
        },
    ),
    m.Residual: _Table(
        "residuals",
        ("id",),
        lambda r: {
            "id": r.id,
            "session_id": r.session_id,
            "variant_id": r.variant_id,
            "created_at": _iso(r.created_at),
        },
    ),
    m.Disposition: _Table(
        "dispositions",
        ("id",),
        lambda d: {
            "id": d.id,
            "session_id": d.session_id,
            "variant_id": d.variant_id,
            "choice": d.choice.value,
            "created_at": _iso(d.created_at),
        },
    ),
}

# The columns of the one telemetry sample type, measure's `Sample` (the packed layout below
# is the schema's, fixed by migrations: the assert says if the two ever part).
TELEMETRY_COLUMNS: tuple[str, ...] = SAMPLE_COLUMNS
assert ("run_id", *PACKED_SAMPLE_COLUMNS) == TELEMETRY_COLUMNS, "packing order drifted"
_TELEMETRY_INSERT = (
    "INSERT INTO telemetry_batches (session_id, run_id, t_first, t_last, n, samples) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)


def _pack(samples: builtins.list[tuple[Any, ...]]) -> str:
    text = json.dumps(samples, separators=(",", ":"), check_circular=False)
    if "NaN" in text or "Infinity" in text:  # not JSON: SQLite's json_each would reject it
        text = json.dumps(
            [[None if (isinstance(v, float) and v != v) or v in (_INF, -_INF) else v for v in row]
             for row in samples],
            separators=(",", ":"),
        )  # fmt: skip
    return text


_INF = float("inf")


class AmbiguousSessionError(LedgerError):
    pass


@dataclass(frozen=True)
class UnreadableRow:
    """A stored row that does not read back as its model (bad JSON, a wrong type, an
    unknown field): shown as such, never allowed to hide the rows around it."""

    table: str
    rowid: int
    reason: str

    def __str__(self) -> str:
        return f"unreadable row: {self.table} rowid {self.rowid}: {self.reason}"


class SessionNotFoundError(LedgerError):
    pass


class UnreadableRowError(LedgerError):
    def __init__(self, row: UnreadableRow):
        super().__init__(str(row))
        self.row = row


@dataclass(frozen=True)
class Versioned(Generic[T]):
    """A record as read, with the row version it was read at."""

    model: T
    version: int


class ConflictError(LedgerError):
    """Someone else wrote the record between our read and our write; nothing was written."""

    def __init__(self, current: BaseModel, changed_fields: builtins.list[str], table: str):
        self.current = current
        self.changed_fields = changed_fields
        fields = ", ".join(changed_fields) or "no field (written again unchanged)"
        super().__init__(
            f"this {table[:-1] if table.endswith('s') else table} was changed elsewhere since "
            f"it was read ({fields}); nothing was written: reload it and apply the edit again"
        )


def _reason(exc: Exception) -> str:
    """One line for why a row does not validate."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "row"
        more = exc.error_count() - 1
        return f"{where}: {first['msg']}" + (f" (+{more} more)" if more else "")
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _cut_sql(column: str, chars: int) -> str:
    """`column` cut to `chars` characters when it is much longer. SQLite's text functions
    stop at a NUL, so a value holding one (its bytes tell) is left whole."""
    raw = f"CAST({column} AS BLOB)"
    return (
        f"CASE WHEN length({raw}) > {4 * chars} AND instr({raw}, x'00') = 0 "
        f"THEN substr({column}, 1, {chars}) ELSE {column} END"
    )


# The machines a session ran on: its baselines' hostnames, then its rounds' hosts (a Slurm
# round's is its node), each once, in the order first met.
_MACHINES = """SELECT group_concat(h, ', ') FROM (
    SELECT h FROM (
        SELECT json_extract(b.data, '$.environment.hostname') AS h, b.rowid AS o
        FROM baselines b WHERE b.session_id = s.id
        UNION ALL
        SELECT json_extract(r.data, '$.host'), 1e15 + r.rowid FROM rounds r
        WHERE r.session_id = s.id
    ) WHERE h IS NOT NULL AND h <> '' GROUP BY h ORDER BY min(o))"""


class Ledger:
    """The gpuopt ledger: one SQLite file, opened under the durability rules."""

    def __init__(self, connection: LedgerConnection):
        self._c = connection
        # Rows that did not validate, met by `list()` since opening: shown, not fatal.
        self.unreadable: builtins.list[UnreadableRow] = []

    @classmethod
    def open(cls, path: Path | str | None = None, readonly: bool = False) -> Ledger:
        return cls(open_connection(path or default_ledger_path(), readonly=readonly))

    @property
    def path(self) -> Path:
        return self._c.path

    @property
    def readonly(self) -> bool:
        return self._c.readonly

    @property
    def newer(self) -> bool:
        return self._c.newer

    @property
    def db(self) -> Any:
        return self._c.db

    def close(self) -> None:
        self._c.close()

    def hold_reserve(self) -> bool:
        """Keep room beside the ledger for closing a round or baseline on a full disk."""
        return not self.readonly and reserve.hold(self.path)

    def release_reserve(self) -> bool:
        """Free that room (after a write failed), so the closing write fits."""
        return not self.readonly and reserve.release(self.path)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def write(self) -> Iterator[Any]:
        with self._c.write() as db:
            yield db

    # ------------------------------------------------------------------ generic

    def put(self, *items: BaseModel) -> None:
        """Insert or replace entities, all in one transaction."""
        # A stretch of items of one table is one kept statement executed many times: a
        # round's commit holds hundreds of runs, and making the statement anew for each
        # was a third of what storing one cost (200 runs: 6.0 ms, now 3.9 ms on this VM).
        batch: list[tuple[Any, ...]] = []
        sql = ""
        with self.write():
            for item in items:
                table = TABLES.get(type(item))
                if table is None:
                    raise TypeError(f"{type(item).__name__} is not stored as a row of its own")
                row = table.columns(item)
                row["data"] = item.model_dump_json()
                item_sql = _upsert_sql(table.name, table.key, tuple(row))
                if item_sql != sql and batch:
                    self._c.conn.executemany(sql, batch)
                    batch = []
                sql = item_sql
                batch.append(tuple(row.values()))
            if batch:
                self._c.conn.executemany(sql, batch)

    @staticmethod
    def _validated(cls: type[T], table: str, rowid: int, data: Any) -> T:
        try:
            return cls.model_validate_json(data)
        except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            raise UnreadableRowError(UnreadableRow(table, rowid, _reason(exc))) from None

    def _note_unreadable(self, row: UnreadableRow) -> None:
        if all((r.table, r.rowid) != (row.table, row.rowid) for r in self.unreadable):
            self.unreadable.append(row)

    def validate_rows(self) -> builtins.list[UnreadableRow]:
        """Every stored row checked against its model: the ones that do not read back."""
        bad: builtins.list[UnreadableRow] = []
        for cls, table in TABLES.items():
            names, rows = self._c.fetch_named(f"SELECT rowid, * FROM {table.name}")
            for values in rows:
                row = dict(zip(names, values, strict=True))
                rowid = values[0]
                try:
                    item = self._validated(cls, table.name, rowid, row["data"])
                except UnreadableRowError as exc:
                    bad.append(exc.row)
                    continue
                # The columns listings read must say what the record says.
                differ = [c for c, v in table.columns(item).items() if row.get(c) != v]
                if differ:
                    bad.append(
                        UnreadableRow(
                            table.name, rowid, f"{', '.join(differ)} differ from the stored record"
                        )
                    )
        for rowid, n, packed in self._c.fetch(
            "SELECT rowid, n, CASE WHEN json_valid(samples) THEN json_array_length(samples) "
            "END FROM telemetry_batches"
        ):
            if packed is None or packed != n:
                why = "samples are not valid JSON" if packed is None else f"{packed} of {n} samples"
                bad.append(UnreadableRow("telemetry_batches", rowid, why))
        return bad

    def get_versioned(self, cls: type[T], key: str | tuple[str, ...]) -> Versioned[T] | None:
        """A record with its row version, for a later `put_if_unchanged`."""
        table = TABLES[cls]
        keys = (key,) if isinstance(key, str) else key
        where = " AND ".join(f"{k} = ?" for k in table.key)
        rows = self._c.fetch(
            f"SELECT rowid, data, version FROM {table.name} WHERE {where}", tuple(keys)
        )
        if not rows:
            return None
        rowid, data, version = rows[0]
        return Versioned(self._validated(cls, table.name, rowid, data), version)

    def put_if_unchanged(self, item: T, read: Versioned[T]) -> Versioned[T]:
        """Write `item` only if its row is still at the version `read` was taken at.

        Raises ConflictError, naming the fields someone else changed, and writes nothing
        otherwise; returns the record at its new version."""
        table = TABLES[type(item)]
        keys = tuple(table.columns(item)[k] for k in table.key)
        with self.write():
            now = self.get_versioned(type(item), keys)
            if now is not None and now.version != read.version:
                changed = [
                    name
                    for name in type(item).model_fields
                    if getattr(now.model, name) != getattr(read.model, name)
                ]
                raise ConflictError(now.model, changed, table.name)
            self.put(item)
            stored = self.get_versioned(type(item), keys)
        assert stored is not None
        return stored

    def find(self, cls: type[T], key: str | tuple[str, ...]) -> T | None:
        """`get()` for reading paths (listings, exports): a row that does not read back is
        noted in `unreadable` and taken as missing, instead of raising."""
        try:
            return self.get(cls, key)
        except UnreadableRowError as exc:
            self._note_unreadable(exc.row)
            return None

    def get(self, cls: type[T], key: str | tuple[str, ...]) -> T | None:
        table = TABLES[cls]
        keys = (key,) if isinstance(key, str) else key
        where = " AND ".join(f"{k} = ?" for k in table.key)
        rows = self._c.fetch(f"SELECT rowid, data FROM {table.name} WHERE {where}", tuple(keys))
        return self._validated(cls, table.name, rows[0][0], rows[0][1]) if rows else None

    def list(self, cls: type[T], order_by: str = "rowid", **where: Any) -> list[T]:
        """The rows of `cls` matching every column = value (None: IS NULL; a tuple: any of
        its values, in one read), as models; rows that do not validate are noted."""
        table = TABLES[cls]
        clauses = []
        params: list[Any] = []
        for col, value in where.items():
            if value is None:
                clauses.append(f"{col} IS NULL")
            elif isinstance(value, (tuple, frozenset)):  # any of these: one read for many
                clauses.append(f"{col} IN ({', '.join('?' * len(value))})" if value else "0")
                params.extend(v.value if hasattr(v, "value") else v for v in value)
            else:
                clauses.append(f"{col} = ?")
                params.append(value.value if hasattr(value, "value") else value)
        sql = f"SELECT rowid, data FROM {table.name}"
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        sql += f" ORDER BY {order_by}"
        found: list[T] = []
        for rowid, data in self._c.fetch(sql, params):
            try:
                found.append(self._validated(cls, table.name, rowid, data))
            except UnreadableRowError as exc:
                self._note_unreadable(exc.row)
        return found

    def query(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[dict[str, Any]]:
        names, rows = self._c.fetch_named(sql, params)
        return [dict(zip(names, row, strict=True)) for row in rows]

    # ------------------------------------------------------------------ sessions

    def session_rows(self, cut: bool = True) -> builtins.list[dict[str, Any]]:
        """One summary row per session, newest first, for listings. `cut`: titles and paths
        cut at lengths no listing shows, so a 20 MB title costs no more than a short one
        (`title_length` and `repo_length` give the whole lengths). `machines`: the hosts its
        baselines and rounds ran on, first seen first (a merged ledger holds several boxes')."""
        title, repo = (
            (_cut_sql("s.title", 1000), _cut_sql("s.repo", 4096)) if cut else ("s.title", "s.repo")
        )
        return self.query(
            f"""
            SELECT s.id, {title} AS title, {repo} AS repo, s.created_at,
                   length(s.title) AS title_length, length(s.repo) AS repo_length,
                   (SELECT COUNT(*) FROM baselines b WHERE b.session_id = s.id) AS baselines,
                   (SELECT COUNT(*) FROM hypotheses h WHERE h.session_id = s.id) AS hypotheses,
                   (SELECT COUNT(*) FROM variants v WHERE v.session_id = s.id) AS variants,
                   (SELECT COUNT(*) FROM rounds r WHERE r.session_id = s.id) AS rounds,
                   ({_MACHINES}) AS machines
            FROM sessions s ORDER BY s.created_at DESC, s.rowid DESC
            """
        )

    def resolve_session(self, ref: str) -> m.Session:
        """A session by its id or a unique prefix of it."""
        ref = ref.strip()
        if not ref:
            raise SessionNotFoundError("no session given")
        # Ids sharing the prefix are adjacent in id order: walk the primary key from the
        # prefix on (exact for any text, NUL included; SQL text functions stop at NUL).
        ids: list[str] = []
        with self._c.lock:
            for (sid,) in self._c.conn.execute(
                "SELECT id FROM sessions WHERE id >= ? ORDER BY id", (ref,)
            ):
                if not sid.startswith(ref) or len(ids) == 3:
                    break
                ids.append(sid)
        if ref in ids:
            ids = [ref]
        if not ids:
            raise SessionNotFoundError(f"no session {ref!r} in {self.path}")
        if len(ids) > 1:
            raise AmbiguousSessionError(
                f"{ref!r} matches several sessions ({', '.join(ids)}…): give more characters"
            )
        session = self.get(m.Session, ids[0])
        assert session is not None
        return session

    def variant(self, session_id: str, ref: str) -> m.Variant:
        """A variant of a session by name, id, or unique id prefix."""
        found = [
            v
            for v in self.list(m.Variant, session_id=session_id)
            if v.name == ref or v.id == ref or v.id.startswith(ref)
        ]
        exact = [v for v in found if v.name == ref or v.id == ref]
        if exact:
            return exact[0]
        if len(found) == 1:
            return found[0]
        if not found:
            raise LedgerError(f"no variant {ref!r} in session {session_id}")
        raise LedgerError(f"{ref!r} matches several variants: give its name")

    def latest_baseline(self, session_id: str) -> m.Baseline | None:
        rows = self.list(m.Baseline, session_id=session_id, order_by="created_at DESC, rowid DESC")
        return rows[0] if rows else None

    # ------------------------------------------------------------------ telemetry

    def insert_samples(self, samples: Iterable[m.TelemetrySample | tuple[Any, ...]]) -> int:
        """Write a batch of telemetry samples in one transaction; returns the count.

        Tuples are taken as (session_id, *TELEMETRY_COLUMNS), the fast path for samplers.
        Samples are packed per (session, run): one row per group, in arrival order.
        """
        groups: dict[tuple[Any, Any], builtins.list[tuple[Any, ...]]] = {}
        count = 0
        for s in samples:
            row = (
                s
                if isinstance(s, tuple)
                else (s.session_id, *(getattr(s, c) for c in TELEMETRY_COLUMNS))
            )
            groups.setdefault((row[0], row[1]), []).append(row[2:])
            count += 1
        if not count:
            return 0
        params = [
            (sid, run, min(r[0] for r in rows), max(r[0] for r in rows), len(rows), _pack(rows))
            for (sid, run), rows in groups.items()
        ]
        with self.write():
            self._c.conn.executemany(_TELEMETRY_INSERT, params)
        return count

    def samples(
        self, run_id: str | None = None, session_id: str | None = None
    ) -> builtins.list[m.TelemetrySample]:
        sql = "SELECT session_id, run_id, samples FROM telemetry_batches"
        params: list[Any] = []
        if run_id is not None:
            sql += " WHERE run_id = ?"
            params.append(run_id)
        elif session_id is not None:
            sql += " WHERE session_id = ?"
            params.append(session_id)
        rows: builtins.list[tuple[Any, ...]] = []
        for sid, rid, packed in self._c.fetch(sql + " ORDER BY t_first, id", params):
            rows.extend((sid, rid, *values) for values in json.loads(packed))
        rows.sort(key=lambda r: r[2])  # stable: arrival order within one timestamp
        names = ("session_id", *TELEMETRY_COLUMNS)
        return [
            m.TelemetrySample(**{k: v for k, v in zip(names, r, strict=True) if v is not None})
            for r in rows
        ]

    # ------------------------------------------------------------------ hypotheses

    def search_hypotheses(
        self, text: str, limit: int = 10, **where: Any
    ) -> builtins.list[m.Hypothesis]:
        """Full-text search over hypothesis text, best match first."""
        words = [w for w in "".join(c if c.isalnum() else " " for c in text).split() if len(w) > 2]
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words[:32])
        sql = (
            "SELECT h.rowid, h.data FROM hypotheses_fts f JOIN hypotheses h ON h.rowid = f.rowid "
            "WHERE hypotheses_fts MATCH ?"
        )
        params: list[Any] = [match]
        for col, value in where.items():
            sql += f" AND h.{col} = ?"
            params.append(value.value if hasattr(value, "value") else value)
        sql += " ORDER BY bm25(hypotheses_fts) LIMIT ?"
        params.append(limit)
        try:
            rows = self._c.fetch(sql, params)
        except sqlite3.OperationalError:
            return []
        found: builtins.list[m.Hypothesis] = []
        for rowid, data in rows:
            try:
                found.append(self._validated(m.Hypothesis, "hypotheses", rowid, data))
            except UnreadableRowError as exc:
                self._note_unreadable(exc.row)
        return found

    # ------------------------------------------------------------------ health

    def check(self) -> builtins.list[str]:
        """Integrity and foreign-key problems, empty when the ledger is sound."""
        problems: list[str] = []
        try:
            problems += [r[0] for r in self._c.fetch("PRAGMA integrity_check") if r[0] != "ok"]
        except sqlite3.DatabaseError as exc:
            problems.append(f"integrity check failed: {exc}")
        try:
            with self._c.lock:
                strangers = foreign_triggers(self._c.conn)
            problems += [f"trigger {name} was not made by gpuopt" for name in strangers]
        except sqlite3.DatabaseError as exc:
            problems.append(f"trigger check failed: {exc}")
        try:
            for table, rowid, parent, _ in self._c.fetch("PRAGMA foreign_key_check"):
                problems.append(f"{table} row {rowid}: missing {parent} row")
        except sqlite3.DatabaseError as exc:
            problems.append(f"foreign-key check failed: {exc}")
        return problems

    def counts(self) -> dict[str, int | None]:
        """Rows per table (None where the table cannot be read)."""
        queries = {t.name: f"SELECT COUNT(*) FROM {t.name}" for t in TABLES.values()}
        queries["telemetry"] = "SELECT COALESCE(SUM(n), 0) FROM telemetry_batches"
        counts: dict[str, int | None] = {}
        for name in sorted(queries):
            try:
                counts[name] = self._c.fetch(queries[name])[0][0]
            except sqlite3.DatabaseError:
                counts[name] = None
        return counts

    def backup(self, target: Path | str) -> None:
        """A consistent copy through VACUUM INTO (never a copy of the .db file alone)."""
        self._c.fetch("VACUUM INTO ?", (str(target),))


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2, default=str)
