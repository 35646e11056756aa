"""The session layer's questions to the ledger beyond a model's get/list, each by name.

SQL lives in ledger/ only (issue 19): session/ calls these, so a table's columns are
known here and nowhere above. Each takes what `Ledger.query` offers (a `Ledger`, or an
adapter of one such as the compute node's journaling ledger); the two writes take the
connection a `ledger.write()` transaction yields, so they land inside the caller's
transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

__all__ = [
    "Reads",
    "baseline_refs",
    "baseline_run_count",
    "checklist_rows",
    "checklist_touched",
    "delete_session_rows",
    "kept_per_session",
    "kept_variant_ids",
    "refs_in_use",
    "round_has_runs",
    "round_runs",
    "save_checklist_item",
    "session_repos",
    "values_per_workload",
    "variant_refs",
]


class Reads(Protocol):
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...


def _marks(n: int) -> str:
    return ", ".join("?" * n)


# ---------------------------------------------------------------------------- runs


def round_has_runs(db: Reads, round_id: str) -> bool:
    """Whether any run of the round was stored."""
    return bool(db.query("SELECT 1 FROM runs WHERE round_id = ? LIMIT 1", (round_id,)))


def baseline_run_count(db: Reads, baseline_id: str) -> int:
    """Runs of the baseline itself (not of rounds), warm-ups and failures included."""
    rows = db.query(
        "SELECT COUNT(*) AS n FROM runs WHERE baseline_id = ? AND round_id IS NULL",
        (baseline_id,),
    )
    return int(rows[0]["n"]) if rows else 0


def values_per_workload(db: Reads, baseline_id: str) -> dict[str, int]:
    """How many measured runs of the baseline itself (not of rounds) gave a value."""
    rows = db.query(
        "SELECT workload, COUNT(*) AS n FROM runs WHERE baseline_id = ? AND round_id IS NULL "
        "AND warmup = 0 AND status = 'ok' GROUP BY workload",
        (baseline_id,),
    )
    return {r["workload"]: r["n"] for r in rows}


def session_runs(
    db: Reads, baseline_id: str | None, round_ids: Sequence[str]
) -> list[dict[str, Any]]:
    """The runs of the baseline itself (round_id NULL) and of these rounds, in the order
    stored (round_id, arm, workload, trust, status, warmup, value): one read where the
    baseline's count and the rounds' rows were two."""
    where, args = [], []
    if baseline_id is not None:
        where.append("(baseline_id = ? AND round_id IS NULL)")
        args.append(baseline_id)
    if round_ids:
        where.append(f"round_id IN ({_marks(len(round_ids))})")
        args.extend(round_ids)
    if not where:
        return []
    return db.query(
        "SELECT round_id, arm, workload, trust, status, warmup, value FROM runs "
        f"WHERE {' OR '.join(where)} ORDER BY rowid",
        tuple(args),
    )


def round_runs(db: Reads, round_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The runs of these rounds (round_id, arm, workload, trust, status, warmup, value), in
    the order stored; one read, none for no rounds."""
    if not round_ids:
        return []
    return db.query(
        "SELECT round_id, arm, workload, trust, status, warmup, value FROM runs "
        f"WHERE round_id IN ({_marks(len(round_ids))}) ORDER BY rowid",
        tuple(round_ids),
    )


# ---------------------------------------------------------------------------- checklist


def checklist_rows(db: Reads, session_id: str) -> list[dict[str, Any]]:
    """The session's stored checklist rows (number, done, note); items never touched have none."""
    return db.query("SELECT number, done, note FROM checklist WHERE session_id = ?", (session_id,))


def checklist_touched(db: Reads, session_id: str) -> int:
    """How many checklist items of the session were ever set."""
    rows = db.query("SELECT COUNT(*) AS n FROM checklist WHERE session_id = ?", (session_id,))
    return int(rows[0]["n"])


def save_checklist_item(conn: Any, session_id: str, number: int, done: bool, note: str) -> None:
    """Insert or replace one checklist item, inside the caller's write transaction."""
    conn.execute(
        "INSERT INTO checklist (session_id, number, done, note) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(session_id, number) DO UPDATE SET done = excluded.done, "
        "note = excluded.note",
        (session_id, number, int(done), note),
    )


# ---------------------------------------------------------------------------- dispositions


def kept_variant_ids(db: Reads, session_id: str, choices: Iterable[str]) -> set[str]:
    """The variants of the session any disposition with one of these choices ever named."""
    kinds = tuple(choices)
    rows = db.query(
        "SELECT DISTINCT variant_id FROM dispositions WHERE session_id = ? AND choice IN "
        f"({_marks(len(kinds))})",
        (session_id, *kinds),
    )
    return {r["variant_id"] for r in rows}


def kept_per_session(db: Reads) -> dict[str, int]:
    """Per session id, how many of its dispositions keep a variant (any of the keep kinds)."""
    rows = db.query(
        "SELECT session_id, COUNT(*) AS n FROM dispositions "
        "WHERE choice LIKE 'keep%' GROUP BY session_id"
    )
    return {r["session_id"]: r["n"] for r in rows}


# ---------------------------------------------------------------------------- snapshot refs


def baseline_refs(db: Reads, session_id: str) -> list[dict[str, Any]]:
    """The session's baselines' snapshots (id, ref, commit_), oldest first, read from the
    columns: a row that no longer validates still counts."""
    return db.query(
        "SELECT id, snapshot_ref AS ref, snapshot_commit AS commit_ FROM baselines "
        "WHERE session_id = ? ORDER BY rowid",
        (session_id,),
    )


def variant_refs(db: Reads, session_id: str) -> list[dict[str, Any]]:
    """The session's variants' snapshots (id, name, ref, commit_), oldest first; the ref is
    read from the JSON (None where a row lacks it)."""
    return db.query(
        "SELECT id, name, json_extract(data, '$.snapshot.ref') AS ref, "
        "snapshot_commit AS commit_ FROM variants WHERE session_id = ? ORDER BY rowid",
        (session_id,),
    )


def refs_in_use(db: Reads) -> tuple[set[str], set[str]]:
    """The snapshot refs and commits some baseline or variant row names, any session's."""
    refs: set[str] = set()
    commits: set[str] = set()
    for r in db.query("SELECT snapshot_ref AS ref, snapshot_commit AS c FROM baselines"):
        refs.add(r["ref"])
        commits.add(r["c"])
    for r in db.query(
        "SELECT json_extract(data, '$.snapshot.ref') AS ref, snapshot_commit AS c FROM variants"
    ):
        refs.add(r["ref"])
        commits.add(r["c"])
    return refs, commits


def session_repos(db: Reads) -> list[dict[str, Any]]:
    """Every session's id and repository, in the order stored."""
    return db.query("SELECT id, repo FROM sessions ORDER BY rowid")


# ---------------------------------------------------------------------------- deleting

# The session's rows, children before their parents (the ledger's foreign keys are on).
# Each: table, and the condition that picks the session's rows (? is the session id).
_OF_SESSION = (
    ("hypothesis_events", "hypothesis_id IN (SELECT id FROM hypotheses WHERE session_id = ?)"),
    ("comparisons", "round_id IN (SELECT id FROM rounds WHERE session_id = ?)"),
    ("telemetry_batches", "session_id = ?"),
    ("runs", "session_id = ?"),
    ("hooks", "session_id = ?"),
    ("audits", "session_id = ?"),
    ("correctness", "session_id = ?"),
    ("residuals", "session_id = ?"),
    ("dispositions", "session_id = ?"),
    ("evidence", "session_id = ?"),
    ("preflight", "session_id = ?"),
    ("checklist", "session_id = ?"),
    ("rounds", "session_id = ?"),
    ("variants", "session_id = ?"),
    ("baselines", "session_id = ?"),
    ("hypotheses", "session_id = ?"),
    ("sessions", "id = ?"),
)


def delete_session_rows(conn: Any, session_id: str) -> dict[str, int]:
    """Delete every row of the session, inside the caller's write transaction; table ->
    rows deleted (tables it had none in are left out)."""
    deleted: dict[str, int] = {}
    for table, where in _OF_SESSION:
        cursor = conn.execute(f"DELETE FROM {table} WHERE {where}", [session_id])
        if cursor.rowcount:
            deleted[table] = cursor.rowcount
    return deleted
