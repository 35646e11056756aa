"""A baseline or round that ends in an error is marked failed with the reason, never left
"being measured" or "running"."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger import Ledger
from session import conduct as c
from session import models as m

VALUE = m.Metric(name="value", source=m.MetricSource.REGEX, pattern=r"(?P<value>[0-9.]+)", unit="")


def _session(ledger: Ledger, repo: Path, setup: str | None = None) -> m.Session:
    contract = m.Contract(
        metric=VALUE,
        workloads=[m.Workload(name="read", command="cat value.txt")],
        hooks=m.Hooks(setup=setup),
    )
    session = m.Session(title="t", repo=str(repo), contract=contract)
    ledger.put(session)
    return session


def test_a_failed_baseline_says_so_with_the_reason(make_repo, tmp_path):
    repo = make_repo(files={"value.txt": "1.00\n"})
    with Ledger.open(tmp_path / "l.db") as ledger:
        session = _session(ledger, repo, setup="echo broken >&2; exit 3")
        with pytest.raises(c.ConductError, match="setup command failed"):
            c.record_baseline(ledger, session, runs=2)
        (baseline,) = ledger.list(m.Baseline, session_id=session.id)
        assert baseline.reproducibility_detail != "being measured"
        assert baseline.reproducibility_detail.startswith("failed")
        assert "setup command failed (exit 3)" in baseline.reproducibility_detail
        with pytest.raises(c.GateRefused, match="failed"):
            c.gate_round(ledger, session)


def test_a_failed_round_is_failed_with_its_error(make_repo, tmp_path):
    repo = make_repo(files={"value.txt": "1.00\n"})
    marker = tmp_path / "broken"
    with Ledger.open(tmp_path / "l.db") as ledger:
        session = _session(ledger, repo, setup=f"if [ -e {marker} ]; then exit 4; fi")
        c.record_baseline(ledger, session, runs=8)
        c.add_variant(ledger, session, "same", ref="HEAD", probe=True)
        marker.touch()
        with pytest.raises(c.ConductError, match="exit 4"):
            c.run_round(ledger, session, min_blocks=2, max_blocks=2)
        (rnd,) = ledger.list(m.Round, session_id=session.id)
        assert rnd.status is m.RoundStatus.FAILED and rnd.ended_at is not None
        assert rnd.error is not None and "setup command failed" in rnd.error
