""" "About N more blocks would decide it" is offered only where more blocks could: never
beside an untrusted verdict, whose words say to fix the cause and run again (a reviewer
saw "INCONCLUSIVE +N" beside "fell into two modes ... fix it and run again"). One rule
(session.verdicts' `more_blocks`), read by the app's round table, the CLI's round table
and the record."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import sample
from rich.text import Text
from sample_session import SID

from session import models as m
from session.read_model import load_view
from session.record_files import record_markdown
from session.verdicts import shown_verdict, verdict_for
from tui.commands.round_cmd import print_round
from tui.screens.steps.round import comparison_table

# the blocks each undecided comparison still needs: trusted, quarantined runs, BROKEN
WAITING, QUARANTINED, BROKEN = 7, 9, 5


def _undecided(tmp_path: Path):  # type: ignore[no-untyped-def]
    """The sample's round with its three comparisons INCONCLUSIVE: fused trusted, same
    with quarantined runs (untrusted), no-max BROKEN (its check failed in the sample).
    (ledger, view, fused, same, no-max)"""
    ledger = sample(tmp_path / "l.db")
    view = load_view(ledger, SID)
    rnd = view.rounds[-1]
    by_name = {view.variant_name(c.variant_id): c for c in view.comparisons[rnd.id]}
    fused, same, nomax = by_name["fused"], by_name["same"], by_name["no-max"]
    for c, needed, quarantined in ((fused, WAITING, 0), (same, QUARANTINED, 2), (nomax, BROKEN, 0)):
        c.verdict, c.ratio = m.Verdict.INCONCLUSIVE, 0.99
        c.ci_low, c.ci_high = 0.95, 1.03
        c.blocks_needed, c.untrusted_runs = needed, quarantined
        c.note = f"about {needed} more blocks would decide; the smallest effect is 3.1%"
        ledger.put(c)
    return ledger, load_view(ledger, SID), fused, same, nomax


def test_more_blocks_are_offered_only_for_a_trusted_undecided_verdict(tmp_path: Path) -> None:
    ledger, view, fused, same, nomax = _undecided(tmp_path)
    rnd = view.rounds[-1]
    assert verdict_for(view, fused).more_blocks == WAITING
    untrusted = verdict_for(view, same)
    assert not untrusted.trusted and untrusted.more_blocks is None
    broken = verdict_for(view, nomax)
    assert broken.broken and broken.more_blocks is None
    # a round whose runs fell into two modes: untrusted, no blocks offered either
    rnd.summary = {"timing_flags": [{"arm": "fused", "arm_id": fused.variant_id,
                                     "workload": fused.workload, "text": "two modes"}]}  # fmt: skip
    two = shown_verdict(fused, round=rnd)
    assert not two.trusted and two.more_blocks is None
    # decided: nothing more to run
    decided = fused.model_copy(update={"verdict": m.Verdict.SAME, "blocks_needed": None})
    assert shown_verdict(decided, round=view.rounds[-1]).more_blocks is None
    ledger.close()


def _line(text: str, name: str) -> str:
    return next(ln for ln in text.splitlines() if ln.lstrip("│ ").startswith(name + " "))


def test_the_app_cli_and_record_offer_blocks_only_where_the_rule_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger, view, _fused, _same, _nomax = _undecided(tmp_path)
    rnd = view.rounds[-1]
    rows = view.comparisons[rnd.id]
    app = comparison_table(view, rnd, rows, width=160).plain
    assert f"+{WAITING}" in _line(app, "fused"), app
    assert f"+{QUARANTINED}" not in _line(app, "same"), app
    assert f"+{BROKEN}" not in _line(app, "no-max"), app

    monkeypatch.setenv("COLUMNS", "200")
    capsys.readouterr()
    print_round(rnd, rows, {v.id: v.name for v in view.variants}, view.session, view.correctness)
    cli = Text.from_ansi(capsys.readouterr().out).plain
    assert f"~{WAITING}" in _line(cli, "fused"), cli
    assert f"~{QUARANTINED}" not in _line(cli, "same"), cli
    assert f"~{BROKEN}" not in _line(cli, "no-max"), cli
    # nor in the stopping rule's note under the table (the round wrote it, trust unknown)
    assert f"about {WAITING} more blocks would decide" in cli
    assert f"about {QUARANTINED} more blocks" not in cli and f"about {BROKEN} more" not in cli

    record = record_markdown(ledger, view.session, view)  # markdown writes "~" as "\~"
    assert f"~{WAITING} more blocks)" in record
    assert f"~{QUARANTINED} more blocks)" not in record, record
    assert f"~{BROKEN} more blocks)" not in record, record
    assert f"about {WAITING} more blocks would decide" in record
    assert f"about {QUARANTINED} more" not in record and f"about {BROKEN} more" not in record
    ledger.close()
