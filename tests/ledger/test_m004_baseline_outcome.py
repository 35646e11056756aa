"""m004_baseline_outcome on a real ledger written by gpuopt before it (data/
m003_baselines.sqlite, made by data/make_m003_ledger.py at commit 910daca): each older
baseline gets its outcome from its words once, as columns and in its row; after that the
outcome is read as a value, and a new baseline stores its own."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from ledger import Ledger
from session import models as m
from session.conduct.baseline import stored_outcome

OLD = Path(__file__).parent / "data" / "m003_baselines.sqlite"
OUT = m.Outcome
EXPECTED = {
    "b0unjudged000": (None, None),
    "b1reproduc000": (OUT.REPRODUCIBLE, 0.02),
    "b2toonoisy000": (OUT.TOO_NOISY, 0.02),
    "b3toofew00000": (OUT.TOO_FEW, 0.01),
    "b4noisyold000": (OUT.TOO_NOISY, None),
    "b5drifting000": (OUT.DRIFTING, 0.02),
    "b6driftcause0": (OUT.DRIFT_CAUSED, 0.02),
    "b7failing0000": (OUT.FAILING, 0.02),
    "b8notpositiv0": (OUT.NOT_POSITIVE, 0.02),
}


def _columns(path: Path) -> dict[str, tuple[str | None, float | None]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT id, outcome, band FROM baselines").fetchall()
    return {bid: (outcome, band) for bid, outcome, band in rows}


def test_older_baselines_get_their_outcome_and_band_as_columns(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    shutil.copy(OLD, path)
    with sqlite3.connect(path) as conn:  # the file really is of the older format
        cols = {r[1] for r in conn.execute("PRAGMA table_info(baselines)")}
    assert "outcome" not in cols
    with Ledger.open(path) as ledger:
        baselines = {b.id: b for b in ledger.list(m.Baseline)}
    assert set(baselines) == set(EXPECTED)
    for bid, (outcome, band) in EXPECTED.items():
        assert stored_outcome(baselines[bid]) is outcome, bid
        assert baselines[bid].outcome is outcome, bid
        assert baselines[bid].threshold == band, bid
    assert _columns(path) == {
        bid: (None if o is None else o.value, band) for bid, (o, band) in EXPECTED.items()
    }


def test_the_outcome_is_read_as_a_value_not_from_the_words(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    shutil.copy(OLD, path)
    with Ledger.open(path) as ledger:
        b = next(b for b in ledger.list(m.Baseline) if b.id == "b5drifting000")
        b.reproducibility_detail = "failing runs: words that no longer decide"
        b.outcome = OUT.DRIFT_CAUSED
        b.threshold = 0.05
        ledger.put(b)
    with Ledger.open(path) as ledger:
        again = next(b for b in ledger.list(m.Baseline) if b.id == "b5drifting000")
    assert stored_outcome(again) is OUT.DRIFT_CAUSED
    assert _columns(path)["b5drifting000"] == (OUT.DRIFT_CAUSED.value, 0.05)
