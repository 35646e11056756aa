"""Issue 19 item 5: one block minimum, from the design. The core refused only fewer than 2
blocks (session/conduct/round.py) while the app refused fewer than 6: a round of 2 blocks
can never decide. Both now ask `session.blocks.blocks_problem`."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger import Ledger
from session import conduct as c
from session import models as m
from session.blocks import fewest_blocks

VALUE = m.Metric(name="value", source=m.MetricSource.REGEX, pattern=r"(?P<value>[0-9.]+)", unit="")


def test_a_round_below_the_designs_minimum_is_refused_before_it_runs(
    make_repo: object, tmp_path: Path
) -> None:
    repo = make_repo(files={"value.txt": "1.00\n"})  # type: ignore[operator]
    contract = m.Contract(
        metric=VALUE, workloads=[m.Workload(name="read", command="cat value.txt")]
    )
    with Ledger.open(tmp_path / "l.db") as ledger:
        session = m.Session(title="t", repo=str(repo), contract=contract)
        ledger.put(session)
        c.record_baseline(ledger, session, runs=8)
        c.add_variant(ledger, session, "same", ref="HEAD", probe=True)
        floor = fewest_blocks(2, 2)
        assert floor > 2
        with pytest.raises(c.BadInput, match=f"min-blocks >= {floor}"):
            c.run_round(ledger, session, min_blocks=2, max_blocks=2)
        assert ledger.list(m.Round, session_id=session.id) == []  # nothing was started
