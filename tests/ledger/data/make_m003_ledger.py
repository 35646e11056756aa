"""Writes m003_baselines.sqlite: a ledger of gpuopt as it stood before m004 (commit 910daca),
one baseline per outcome its words could tell. Run with that commit's code on PYTHONPATH:
  git archive 910daca ledger session measure tests/session/method_factory.py | tar -x -C OLD
  PYTHONPATH=OLD:OLD/tests/session python tests/ledger/data/make_m003_ledger.py"""

from pathlib import Path

from method_factory import make_baseline, make_session

from ledger import Ledger
from session import models as m

R = m.Reproducibility
ROWS = [  # (id, reproducibility, detail, band)
    ("b0unjudged000", R.UNJUDGED, "interrupted after 3 of 10 runs", None),
    ("b1reproduc000", R.REPRODUCIBLE, "split-half ratio 1.004 [0.991, 1.017]", 0.02),
    ("b2toonoisy000", R.TOO_NOISY, "too noisy for a 2% band: halves 1.01 [0.97, 1.05]", 0.02),
    ("b3toofew00000", R.TOO_NOISY, "too few runs to compare halves at 1%", 0.01),
    ("b4noisyold000", R.NOT_REPRODUCIBLE, "too noisy for a 1% band (an older row)", None),
    ("b5drifting000", R.NOT_REPRODUCIBLE, "drifting: the second half 3% slower", 0.02),
    (
        "b6driftcause0",
        R.NOT_REPRODUCIBLE,
        "drifting, with a cause the telemetry names: clocks",
        0.02,
    ),
    ("b7failing0000", R.NOT_REPRODUCIBLE, "failing runs: 2 of 10 gave no value", 0.02),
    ("b8notpositiv0", R.NOT_REPRODUCIBLE, "zero or negative figures: 0.0 at run 1", 0.02),
]

if __name__ == "__main__":
    path = Path(__file__).with_name("m003_baselines.sqlite")
    path.unlink(missing_ok=True)
    with Ledger.open(path) as ledger:
        session = make_session(ledger)
        for bid, r, detail, band in ROWS:
            b = make_baseline(ledger, session, r, bid=bid)
            b.reproducibility_detail = detail
            b.threshold = band
            ledger.put(b)
