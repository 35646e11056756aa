"""Ledger reads of one session view, its record and one results-pane redraw (a script, not a
pytest test); prints its figures.

    .venv/bin/python -m tests.benchmarks.reads [--sql]

On the 3-variant sample session the screenshots show (tests/tui/sample_session.py), each
SQL statement the ledger's connection executes is counted through sqlite3's
`set_trace_callback`, for:

1. `session.read_model.load_view`: one view of the session;
2. `session.record.model.gather`, given that view (what an export reads beyond it) and
   without one (the whole record, view included);
3. one redraw of the results pane, given its view: the comparison table, the per-variant
   detail and the pane's "Next:" hint (`residual_suggestion` for each variant), as
   `ResultsPane.show` draws them on every refresh and resize. Drawn without an app, so the
   figure is the ledger's alone.

The goal (issue 19): at most one read per table for a load, 0 for a redraw. Each figure is
printed with its reads per table and the tables read more than once; `--sql` prints the
statements themselves. tests/session/test_view_reads.py holds these figures.

Measured on the sample: before the one loaded view (main at a5ef0f7) load_view 40 reads over
14 tables, gather given the view 34, the whole gather 74, a redraw 21; after it 14 over 14,
2 (hypothesis events and the rounds' runs), 16 (runs twice: the view counts the baseline's,
the record reads the rounds'), 0.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "tui"))

from sample_session import SID, build_sample  # noqa: E402

from ledger import Ledger  # noqa: E402

_TABLE = re.compile(r"\b(?:FROM|JOIN)\s+([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)
_SKIP = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "PRAGMA")


class Reads:
    """The statements a connection executes while `count` runs, transaction control and
    pragmas left out (a read path writes nothing: any write would show here too)."""

    def __init__(self, ledger: Ledger) -> None:
        self.statements: list[str] = []
        self.callers: list[str] = []
        self._on = False
        ledger._c.conn.set_trace_callback(self._trace)

    def _trace(self, sql: str) -> None:
        head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if self._on and head not in _SKIP:
            self.statements.append(" ".join(sql.split()))
            self.callers.append(_caller())

    def count(self, what: Callable[[], Any]) -> list[tuple[str, str]]:
        self.statements, self.callers = [], []
        self._on = True
        try:
            what()
        finally:
            self._on = False
        return list(zip(self.statements, self.callers, strict=True))


def _caller() -> str:
    """The innermost function outside ledger/ and this script that asked for the read,
    with the chain of gpuopt functions above it (innermost first)."""
    chain: list[str] = []
    for frame in reversed(traceback.extract_stack()):
        rel = Path(frame.filename).resolve()
        try:
            name = rel.relative_to(ROOT).as_posix()
        except ValueError:
            continue
        if name.startswith(("ledger/", "tests/")) or frame.name.startswith("<"):
            continue
        chain.append(f"{name.removesuffix('.py').replace('/', '.')}.{frame.name}")
    return " < ".join(chain[:3])


def per_table(statements: list[tuple[str, str]]) -> Counter[str]:
    tables: Counter[str] = Counter()
    for sql, _ in statements:
        for name in sorted(set(_TABLE.findall(sql))):
            if not name.startswith("sqlite_") and name != "json_each":
                tables[name] += 1
    return tables


def redraw(ledger: Ledger, view: Any) -> None:
    """What `ResultsPane.show` computes from the ledger on one redraw, without an app."""
    from session.read_model import residual_suggestion
    from tui.screens.steps.results import results_detail
    from tui.screens.steps.round import comparison_table

    rnd = view.rounds[-1]
    comparison_table(view, rnd, view.comparisons.get(rnd.id, []), width=100)
    results_detail(view, rnd, ledger)
    for v in view.variants:  # ResultsPane.next_hint
        if view.residual_of(v.id) is None:
            residual_suggestion(ledger, view, v)


def report(name: str, statements: list[tuple[str, str]], show_sql: bool) -> None:
    tables = per_table(statements)
    again = {t: n for t, n in tables.items() if n > 1}
    print(f"{name}: {len(statements)} reads over {len(tables)} tables")
    print("  per table: " + (", ".join(f"{t} {n}" for t, n in tables.most_common()) or "none"))
    if again:
        print(f"  read more than once: {len(again)} tables, {sum(again.values())} reads")
    callers = Counter(caller.split(" < ")[0] for _, caller in statements)
    print("  asked by: " + ", ".join(f"{c} {n}" for c, n in callers.most_common()))
    if show_sql:
        for sql, caller in statements:
            print(f"    {sql[:150]}\n      from {caller}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sql", action="store_true", help="print each statement")
    args = parser.parse_args(argv)

    from session.read_model import load_view
    from session.record.model import gather

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sample.db"
        with Ledger.open(path) as ledger:
            build_sample(ledger)
        with Ledger.open(path) as ledger:
            reads = Reads(ledger)
            load_view(ledger, SID)  # warm: the first opening's schema checks are not a load
            view: Any = None

            def load() -> None:
                nonlocal view
                view = load_view(ledger, SID)

            loaded = reads.count(load)
            session = view.session
            with_view = reads.count(lambda: gather(ledger, session, view=view))
            whole = reads.count(lambda: gather(ledger, session))
            drawn = reads.count(lambda: redraw(ledger, view))
        print(f"sample session {SID}: {len(view.variants)} variants, {len(view.rounds)} round(s)")
        report("load_view", loaded, args.sql)
        report("gather, given the view", with_view, args.sql)
        report("gather, whole record (view included)", whole, args.sql)
        report("results-pane redraw", drawn, args.sql)
    return 0


if __name__ == "__main__":
    sys.exit(main())
