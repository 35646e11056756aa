"""The ledger reads of one session view, its record and one results-pane redraw, held to
the figures of `python -m tests.benchmarks.reads` (issue 19): a load reads each table once,
a record given the view adds only the tables the view lacks, once each, and a redraw reads
nothing. Counted on a real SQLite file through its connection's trace callback."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger import Ledger
from session.read_model import load_view
from session.record.model import gather

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("reads_bench", ROOT / "tests/benchmarks/reads.py")
assert _spec and _spec.loader
bench: Any = importlib.util.module_from_spec(_spec)
sys.modules["reads_bench"] = bench
_spec.loader.exec_module(bench)


@pytest.fixture
def sample(tmp_path: Path) -> Any:
    path = tmp_path / "sample.db"
    with Ledger.open(path) as ledger:
        bench.build_sample(ledger)
    with Ledger.open(path) as ledger:
        load_view(ledger, bench.SID)  # the first opening's schema checks are not a load
        yield ledger, bench.Reads(ledger)


def _twice(statements: list[tuple[str, str]]) -> dict[str, int]:
    return {t: n for t, n in bench.per_table(statements).items() if n > 1}


def test_a_load_reads_each_table_once(sample: Any) -> None:
    ledger, reads = sample
    views: list[Any] = []
    loaded = reads.count(lambda: views.append(load_view(ledger, bench.SID)))
    assert len(views[0].variants) == 3 and views[0].rounds  # the sample, all of it read
    assert _twice(loaded) == {}, loaded
    assert len(loaded) == len(bench.per_table(loaded))  # one statement per table


def test_a_record_given_its_view_adds_only_what_the_view_lacks(sample: Any) -> None:
    ledger, reads = sample
    view = load_view(ledger, bench.SID)
    loaded = bench.per_table(reads.count(lambda: load_view(ledger, bench.SID)))
    added = reads.count(lambda: gather(ledger, view.session, view=view))
    assert _twice(added) == {}, added
    # the view counts the baseline's runs; the record reads the rounds' runs themselves
    again = set(bench.per_table(added)) & set(loaded)
    assert again <= {"runs"}, added


def test_the_whole_record_reads_each_table_once(sample: Any) -> None:
    # Read `runs` twice before: the view's count of the baseline's runs, then the record's
    # rows of the rounds' runs. Gathered whole, the view reads both in one.
    ledger, reads = sample
    session = load_view(ledger, bench.SID).session
    records: list[Any] = []
    whole = reads.count(lambda: records.append(gather(ledger, session)))
    assert _twice(whole) == {}, whole
    assert "runs" in bench.per_table(whole) and "hypothesis_events" in bench.per_table(whole)
    given = gather(ledger, session, view=load_view(ledger, bench.SID))
    assert records[0].model_dump() == given.model_dump()  # the same record either way


def test_a_results_pane_redraw_reads_nothing(sample: Any) -> None:
    ledger, reads = sample
    view = load_view(ledger, bench.SID)
    assert reads.count(lambda: bench.redraw(ledger, view)) == []
