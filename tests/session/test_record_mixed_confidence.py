"""The record's summary table names each interval's confidence when its rows differ: a
FASTER decided on its 99% interval beside an INCONCLUSIVE shown on its wider one headed
"ratio (CI)", and neither cell said which was which (seen in the Record step of the demo)."""

from __future__ import annotations

import re
from pathlib import Path

from test_record_fix_tester import W, _baseline, _record, _round, _session, _variant

from ledger import Ledger
from session import models as m
from session.md import fitted
from session.record import to_markdown


def _mixed(ledger: Ledger) -> m.Session:
    s = _session(ledger)
    b = _baseline(ledger, s)
    fast, unsure = _variant(ledger, s, "fast", 2), _variant(ledger, s, "unsure", 3)
    r = _round(ledger, s, b, 1, [fast, unsure])
    for c in ledger.list(m.Comparison, round_id=r.id):
        decided = c.variant_id == fast.id
        c.verdict = m.Verdict.FASTER if decided else m.Verdict.INCONCLUSIVE
        c.confidence = 0.99 if decided else 0.998
        ledger.put(c)
    return s


def _summary_rows(md: str) -> dict[str, str]:
    head = md[: md.index("# Details")]
    return {
        name: line
        for line in head.splitlines()
        for name in ("fast", "unsure")
        if line.startswith(f"| {name} |")
    }


def test_each_interval_of_a_mixed_summary_names_its_confidence(tmp_path: Path) -> None:
    x, md = _record(tmp_path, _mixed)
    with fitted(80):  # the Record step's narrow table
        narrow = to_markdown(x)
    for layout in (md, narrow):
        rows = _summary_rows(layout)
        assert set(rows) == {"fast", "unsure"}, layout[:3000]
        assert re.search(r"99% CI [\d.]+–[\d.]+", rows["fast"]), rows["fast"]
        assert re.search(r"99\.8% CI [\d.]+–[\d.]+", rows["unsure"]), rows["unsure"]
    assert W  # one workload: no workload column in the narrow table


def test_a_summary_at_one_confidence_names_it_once_in_its_heading(tmp_path: Path) -> None:
    def same(ledger: Ledger) -> m.Session:
        s = _mixed(ledger)
        for c in ledger.list(m.Comparison):
            c.confidence = 0.99
            ledger.put(c)
        return s

    x, md = _record(tmp_path, same)
    with fitted(80):
        narrow = to_markdown(x)
    for layout in (md, narrow):
        assert "(99% CI)" in layout
        assert not any("% CI " in row for row in _summary_rows(layout).values())


def test_each_interval_of_a_mixed_round_table_names_its_confidence(tmp_path: Path) -> None:
    """The Rounds section's table too ("ratio (CI)" over bare "[0.199, 0.208]" in the demo)."""
    _, md = _record(tmp_path, _mixed)
    details = md[md.index("# Details") :]
    rows = [ln for ln in details.splitlines() if ln.startswith("| round 1 |")]
    assert len(rows) == 2, details[:3000]
    fast = next(r for r in rows if "| fast |" in r)
    unsure = next(r for r in rows if "| unsure |" in r)
    assert re.search(r"(\[|&#91;)99% CI [\d.]+, [\d.]+", fast), fast
    assert re.search(r"(\[|&#91;)99\.8% CI [\d.]+, [\d.]+", unsure), unsure
