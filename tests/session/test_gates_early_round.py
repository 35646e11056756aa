"""A verdict from a round cut short (Ctrl+C, time budget) before its minimum of blocks."""

from __future__ import annotations

import pytest
from method_factory import (
    error_stats,
    make_baseline,
    make_comparison,
    make_correctness,
    make_round,
    make_session,
    make_variant,
    open_ledger,
)

from session import models as m
from session.dispositions import dispose
from session.gates import GateRefusal

KEEP = dict(optimization_class="C2", guards=["n <= 4096"], fallback="the old path")


@pytest.fixture
def ledger(tmp_path):
    with open_ledger(tmp_path) as lg:
        yield lg


def _measured(ledger, status: m.RoundStatus, blocks: int):
    s = make_session(ledger)
    b = make_baseline(ledger, s)
    v = make_variant(ledger, s)
    r = make_round(ledger, s, b, [v])
    r.status, r.blocks = status, blocks
    ledger.put(r)
    make_comparison(ledger, r, v)  # FASTER
    make_correctness(ledger, s, v, stats=[error_stats()])
    return s, v


@pytest.mark.parametrize("choice", ["keep-default", "keep-guarded", "keep-local"])
def test_keep_refused_when_the_round_stopped_before_its_minimum(ledger, choice):
    s, v = _measured(ledger, m.RoundStatus.INTERRUPTED, 7)
    with pytest.raises(GateRefusal) as info:
        dispose(ledger, s, v, choice, **KEEP)
    assert "7 of at least 10 blocks" in info.value.reason
    # the person may still reject it or ask for more evidence
    d = dispose(ledger, s, v, "need-evidence", reason="a full round")
    assert d.choice is m.DispositionChoice.NEED_EVIDENCE


def test_keep_refused_while_the_round_is_still_running(ledger):
    s, v = _measured(ledger, m.RoundStatus.RUNNING, 12)
    with pytest.raises(GateRefusal, match="still running"):
        dispose(ledger, s, v, "keep-default", **KEEP)


def test_keep_allowed_from_an_interrupted_round_past_its_minimum(ledger):
    s, v = _measured(ledger, m.RoundStatus.INTERRUPTED, 12)
    assert dispose(ledger, s, v, "keep-default", **KEEP).choice is m.DispositionChoice.KEEP_DEFAULT
