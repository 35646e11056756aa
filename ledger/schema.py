"""The ledger's schema, created explicitly through sqlite-utils Migrations.

Each entity table keeps the columns that queries filter and sort on, plus `data`: the
model's full JSON, so a row always reads back as the exact model that was written.
Telemetry samples are plain columns: they are many, and read as series.
"""

from __future__ import annotations

import json
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlite_utils import Database
    from sqlite_utils.migrations import Migrations

MIGRATION_SET = "gpuopt"
APPLICATION_ID = 0x4750554F  # "GPUO": marks a file as a gpuopt ledger

_TABLES = """
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    repo TEXT NOT NULL,
    created_at TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE baselines (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    snapshot_commit TEXT NOT NULL,
    snapshot_ref TEXT NOT NULL,
    reproducibility TEXT NOT NULL,
    created_at TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX idx_baselines_session ON baselines(session_id);
CREATE TABLE hypotheses (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    confidence TEXT NOT NULL,
    search_text TEXT NOT NULL,
    created_at TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX idx_hypotheses_session ON hypotheses(session_id);
CREATE TABLE hypothesis_events (
    id TEXT PRIMARY KEY,
    hypothesis_id TEXT NOT NULL REFERENCES hypotheses(id),
    field TEXT NOT NULL,
    from_value TEXT,
    to_value TEXT,
    why TEXT NOT NULL,
    at TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX idx_hypothesis_events_h ON hypothesis_events(hypothesis_id);
CREATE TABLE variants (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    name TEXT NOT NULL,
    hypothesis_id TEXT REFERENCES hypotheses(id),
    kind TEXT NOT NULL,
    snapshot_commit TEXT NOT NULL,
    created_at TEXT NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (session_id, name)
);
CREATE TABLE evidence (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    hypothesis_id TEXT REFERENCES hypotheses(id),
    variant_id TEXT REFERENCES variants(id),
    kind TEXT NOT NULL,
    created_at TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX idx_evidence_session ON evidence(session_id);
CREATE TABLE preflight (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    question TEXT NOT NULL,
    kind TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, question)
);
CREATE TABLE checklist (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    number INTEGER NOT NULL,
    done INTEGER NOT NULL,
    note TEXT NOT NULL,
    PRIMARY KEY (session_id, number)
);
CREATE TABLE rounds (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    baseline_id TEXT NOT NULL REFERENCES baselines(id),
    number INTEGER NOT NULL,
    status TEXT NOT NULL,
    blocks INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX idx_rounds_session ON rounds(session_id);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    round_id TEXT REFERENCES rounds(id),
    baseline_id TEXT REFERENCES baselines(id),
    arm TEXT NOT NULL,
    workload TEXT NOT NULL,
    block INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    warmup INTEGER NOT NULL,
    status TEXT NOT NULL,
    value REAL,
    trust TEXT NOT NULL,
    started_us INTEGER NOT NULL,
    ended_us INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX idx_runs_round ON runs(round_id);
CREATE INDEX idx_runs_baseline ON runs(baseline_id);
CREATE TABLE telemetry_batches (
    id INTEGER PRIMARY KEY,
    session_id TEXT,
    run_id TEXT,
    t_first INTEGER NOT NULL,
    t_last INTEGER NOT NULL,
    n INTEGER NOT NULL,
    samples TEXT NOT NULL
);
CREATE INDEX idx_telemetry_batches_run ON telemetry_batches(run_id);
CREATE INDEX idx_telemetry_batches_session_t ON telemetry_batches(session_id, t_first);
CREATE TABLE hooks (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    round_id TEXT REFERENCES rounds(id),
    variant_id TEXT,
    kind TEXT NOT NULL,
    at TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE audits (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    arm TEXT NOT NULL,
    workload TEXT NOT NULL,
    created_at TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE correctness (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    variant_id TEXT NOT NULL REFERENCES variants(id),
    workload TEXT NOT NULL,
    passed INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE comparisons (
    id TEXT PRIMARY KEY,
    round_id TEXT NOT NULL REFERENCES rounds(id),
    variant_id TEXT NOT NULL REFERENCES variants(id),
    workload TEXT NOT NULL,
    n INTEGER NOT NULL,
    ratio REAL,
    ci_low REAL,
    ci_high REAL,
    verdict TEXT NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (round_id, variant_id, workload)
);
CREATE TABLE residuals (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    variant_id TEXT NOT NULL REFERENCES variants(id),
    created_at TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE dispositions (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    variant_id TEXT NOT NULL REFERENCES variants(id),
    choice TEXT NOT NULL,
    created_at TEXT NOT NULL,
    data TEXT NOT NULL
);
"""


# Telemetry is stored packed: one row per (session, run) and batch, its samples a JSON
# array of arrays in this column order. Packing is what lets a sampler's batches go in at
# several hundred thousand samples a second; the `telemetry` view unpacks them for SQL.
PACKED_SAMPLE_COLUMNS: tuple[str, ...] = (
    "t_us", "source", "gpu", "sm_clock_mhz", "mem_clock_mhz", "clock_reasons", "power_w",
    "power_limit_w", "temperature_c", "util_gpu", "util_mem", "mem_used_bytes", "pcie_tx_kbps",
    "pcie_rx_kbps", "pstate", "cpu_percent", "rss_bytes", "load1",
)  # fmt: skip


def _telemetry_view() -> str:
    fields = ",\n    ".join(
        f"json_extract(e.value, '$[{i}]') AS {name}" for i, name in enumerate(PACKED_SAMPLE_COLUMNS)
    )
    return (
        "CREATE VIEW telemetry AS SELECT\n    b.id AS batch_id, b.session_id AS session_id,\n"
        f"    b.run_id AS run_id,\n    {fields}\n"
        "FROM telemetry_batches b, json_each(b.samples) e"
    )


def m001_initial(db: Database) -> None:
    for statement in _TABLES.split(";"):
        if statement.strip():
            db.execute(statement)
    db.execute(_telemetry_view())
    # Full-text search over what a hypothesis says, kept in step by triggers.
    db.table("hypotheses").enable_fts(
        ["title", "search_text"], fts_version="FTS5", create_triggers=True
    )


# The entity tables: each row is one model, rewritten whole by `Ledger.put`.
VERSIONED_TABLES = (
    "sessions", "baselines", "hypotheses", "hypothesis_events", "variants", "evidence",
    "preflight", "rounds", "runs", "hooks", "audits", "correctness", "comparisons",
    "residuals", "dispositions",
)  # fmt: skip


def m002_row_versions(db: Database) -> None:
    """A version per row, raised by every write: a writer that read version N and finds
    N+1 knows someone else wrote the row in between (optimistic concurrency)."""
    for table in VERSIONED_TABLES:
        db.execute(f"ALTER TABLE {table} ADD COLUMN version INTEGER NOT NULL DEFAULT 1")


def m003_bisections(db: Database) -> None:
    """Bisections (`gpuopt bisect`): one row each, its steps and answer in `data`. The
    session whose contract it used is named, not referenced: the record copies what it ran,
    and stays readable when that session is deleted."""
    db.execute(
        """CREATE TABLE bisections (
    id TEXT PRIMARY KEY,
    session_id TEXT,
    repo TEXT NOT NULL,
    good TEXT NOT NULL,
    bad TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    data TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 1
)"""
    )
    db.execute("CREATE INDEX idx_bisections_session ON bisections(session_id)")


# The words a baseline's detail began with for each outcome, before the outcome was stored
# (the values of session.models.Outcome, as they stood then): read once, by m004, to give
# older rows theirs.
_OLD_WORDS = (
    "drifting, with a cause the telemetry names",
    "failing runs",
    "zero or negative figures",
)


_REPRODUCIBILITY = {
    "reproducible": "reproducible",
    "too noisy for this band": "too_noisy",
    "too few runs": "too_noisy",
}


def _outcome_from_words(reproducibility: str, detail: str) -> str | None:
    if reproducibility == "unjudged":
        return None
    if reproducibility == "reproducible":
        return "reproducible"
    if reproducibility == "too_noisy":
        return "too few runs" if detail.startswith("too few") else "too noisy for this band"
    if detail.startswith("too noisy"):
        return "too noisy for this band"
    for words in _OLD_WORDS:
        if detail.startswith(words):
            return words
    return "drifting"


def m004_baseline_outcome(db: Database) -> None:
    """A baseline's outcome and band as columns (and its outcome in its row's data), so no
    reader rebuilds them from the words of its detail; older rows get theirs from those
    words here, once."""
    db.execute("ALTER TABLE baselines ADD COLUMN outcome TEXT")
    db.execute("ALTER TABLE baselines ADD COLUMN band REAL")
    rows = db.execute("SELECT id, data FROM baselines").fetchall()
    for bid, data in rows:
        row = json.loads(data)
        outcome = _outcome_from_words(
            str(row.get("reproducibility", "unjudged")), str(row.get("reproducibility_detail", ""))
        )
        if outcome is not None:
            row["outcome"] = outcome
            # the coarse word follows the outcome: a row from before TOO_NOISY was stored
            # said not_reproducible for a too-noisy baseline
            row["reproducibility"] = _REPRODUCIBILITY.get(outcome, "not_reproducible")
        db.execute(
            "UPDATE baselines SET outcome = ?, band = ?, reproducibility = ?, data = ? "
            "WHERE id = ?",
            [
                outcome,
                row.get("threshold"),
                row.get("reproducibility", "unjudged"),
                json.dumps(row),
                bid,
            ],
        )


# In order; a test checks that these names are the ones the migration set applies.
MIGRATIONS = [m001_initial, m002_row_versions, m003_bisections, m004_baseline_outcome]
KNOWN_MIGRATIONS = frozenset(f.__name__ for f in MIGRATIONS)


@cache
def migration_set() -> Migrations:
    """The sqlite-utils migration set, built on first use: a ledger that is up to date is
    opened without importing sqlite-utils."""
    from ledger.sqlite_lib import Migrations  # lazy: sqlite-utils costs start-up time

    migrations = Migrations(MIGRATION_SET)
    for step in MIGRATIONS:
        migrations(name=step.__name__)(step)
    return migrations
