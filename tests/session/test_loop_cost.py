"""Issue 21 item 4: a round's per-block work stays flat as blocks come in. The paired
statistics cost O(n) to O(n^2) per judgement; judged after every block, a long round of a
short command spent most of its time there. Counted with spies on the real functions, not
timed, so a slow machine cannot hide it or fake it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_conduct_scripted import ScriptedExecutor, _noisy, records

from ledger import Ledger
from measure import sequential
from session import models as m
from session.conduct import BASELINE_ARM
from session.conduct.common import Progress
from session.conduct.loop import (
    COMMIT_EVERY_S,
    FRESH_BLOCKS,
    PROGRESS_EVERY_S,
    Plan,
    RoundLoop,
)


class HeldExecutor(ScriptedExecutor):
    """Runs stored at each flush, as a round's executor does (not one commit per run)."""

    def run(self, run: m.Run, cwd: Path) -> m.Run:
        got = self.script(run)
        assert isinstance(got, float)
        run.trust, run.status, run.value, run.exit_code = m.Trust.CLEAN, m.RunStatus.OK, got, 0
        self.runs.append(run)
        return run


def _noisy_round(
    ledger: Ledger, min_blocks: int, max_blocks: int, seen: list[Progress]
) -> RoundLoop:
    """A round of one variant against the baseline on a scripted A/A with much noise."""
    session, baseline, chosen = records(ledger)
    rnd = m.Round(session_id=session.id, baseline_id=baseline.id, variant_ids=[chosen[0].id],
                  min_blocks=min_blocks, max_blocks=max_blocks)  # fmt: skip
    ledger.put(rnd)
    trees = {BASELINE_ARM: Path("/nonexistent"), chosen[0].id: Path("/nonexistent")}
    plan = Plan(session, rnd, baseline, chosen, trees, 1, 0.02, min_blocks, max_blocks)
    return RoundLoop(ledger, HeldExecutor(ledger, _noisy(1.0, 0.3, 5)), plan, progress=seen.append)


def test_statistics_are_judged_at_looks_and_commits_not_at_every_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judged: list[int] = []
    copies: list[int] = []
    real_judge = sequential.judge
    real_copy = m.Comparison.model_copy

    def judge(d, threshold, design):  # type: ignore[no-untyped-def]
        judged.append(len(d))
        return real_judge(d, threshold, design)

    def model_copy(self, *a, **k):  # type: ignore[no-untyped-def]
        copies.append(1)
        return real_copy(self, *a, **k)

    monkeypatch.setattr(sequential, "judge", judge)
    monkeypatch.setattr(m.Comparison, "model_copy", model_copy)
    min_blocks, max_blocks = 10, 300
    seen: list[Progress] = []
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        # A/A with much noise: no look decides, every block of the limit is run
        loop = _noisy_round(ledger, min_blocks, max_blocks, seen)
        t0 = time.monotonic()
        loop.warm_up()
        stop_why = loop.blocks()
        elapsed = time.monotonic() - t0
    assert stop_why == "block limit reached" and loop.completed == max_blocks
    design = sequential.Design.plan(min_blocks, max_blocks)
    # every block of the first few, every look, and at most one per commit interval
    bound = FRESH_BLOCKS + len(design.looks) + elapsed / COMMIT_EVERY_S + 1
    assert len(judged) <= bound, (len(judged), bound)
    assert len(judged) < max_blocks  # judged after every block, it was exactly max_blocks
    assert len(copies) == len(judged)  # the progress copies the comparisons once a judgement
    # progress: each of the first blocks, every look, the last block, and between them at
    # most one report per PROGRESS_EVERY_S (blocks of a scripted executor take microseconds:
    # reported one by one, the report was a thirtieth of a run of `true`)
    rounds = [p for p in seen if p.phase == "round"]
    said = [p.block for p in rounds]
    assert said == sorted(set(said))  # in order, each once
    assert set(range(1, FRESH_BLOCKS + 1)) | set(design.looks) | {max_blocks} <= set(said)
    extra = len(said) - len(set(range(1, FRESH_BLOCKS + 1)) | set(design.looks) | {max_blocks})
    assert extra <= elapsed / PROGRESS_EVERY_S + 1, (extra, elapsed)
    assert all(len(p.comparisons) == 1 for p in rounds)
    assert rounds[-1].comparisons[0].n == max_blocks  # the limit is judged


def test_a_round_stopped_between_reports_still_reports_its_last_block(tmp_path: Path) -> None:
    """Progress comes at most PROGRESS_EVERY_S apart; a stop from outside in between still
    leaves the last completed block reported, not an older one."""
    min_blocks, max_blocks, stop_at = 10, 300, 57  # 57: neither a fresh block nor a look
    seen: list[Progress] = []
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        assert stop_at not in sequential.Design.plan(min_blocks, max_blocks).looks
        loop = _noisy_round(ledger, min_blocks, max_blocks, seen)
        loop.stopped = lambda: loop.completed >= stop_at
        loop.warm_up()
        assert loop.blocks() is None  # stopped from outside
    rounds = [p for p in seen if p.phase == "round"]
    assert loop.completed == stop_at and rounds[-1].block == stop_at
    assert len(rounds) < stop_at  # not every block: the reports were spaced
