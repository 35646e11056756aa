"""Every raw sample of a session as CSV: one row per run (baseline and rounds, warm-ups
and quarantined runs included, each marked), for a spreadsheet or a script of one's own.

`runs_csv(ledger, session)` reads the session's runs once; the columns are `COLUMNS`.
Stored text (names, errors) goes out as it is stored, quoted by the csv module: a CSV is
data, not a screen.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

from session import models as m

if TYPE_CHECKING:
    from ledger import Ledger

__all__ = ["COLUMNS", "runs_csv"]

COLUMNS = (
    "run_id", "phase", "round", "arm", "variant", "workload", "block", "attempt", "warmup",
    "status", "value", "wall_s", "user_s", "sys_s", "memory_usage_byte", "exit_code",
    "trust", "started_us", "ended_us", "error",
)  # fmt: skip


def runs_csv(ledger: Ledger, session: m.Session) -> str:
    """The session's runs, oldest first, as CSV text with a header row."""
    names = {v.id: v.name for v in ledger.list(m.Variant, session_id=session.id)}
    numbers = {r.id: r.number for r in ledger.list(m.Round, session_id=session.id)}
    runs = sorted(ledger.list(m.Run, session_id=session.id), key=lambda r: (r.started_us, r.id))
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in runs:
        w.writerow(
            [
                r.id,
                "round" if r.round_id else "baseline",
                numbers.get(r.round_id, "") if r.round_id else "",
                r.arm,
                names.get(r.arm, "baseline" if r.arm == "baseline" else r.arm),
                r.workload,
                r.block,
                r.attempt,
                int(r.warmup),
                r.status.value,
                _num(r.value),
                _num(r.wall_s),
                _num(r.user_s),
                _num(r.sys_s),
                "" if r.peak_rss_bytes is None else r.peak_rss_bytes,
                "" if r.exit_code is None else r.exit_code,
                r.trust.value,
                r.started_us,
                r.ended_us,
                r.error,
            ]
        )
    return out.getvalue()


def _num(x: float | None) -> str:
    return "" if x is None else repr(float(x))
