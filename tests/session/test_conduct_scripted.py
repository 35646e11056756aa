"""The round loop driven by a scripted executor: chosen values, no processes (as hyperfine
tests its logic with a MockExecutor). The ledger stays real. The executor is shared with
tests/session/test_adaptive_baseline.py."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from ledger import Ledger
from session import models as m
from session.conduct import BASELINE_ARM
from session.conduct.loop import Plan, RoundLoop

FAIL = "fail"
UNTRUSTED = "untrusted"

Script = Callable[[m.Run], float | str]  # a value, FAIL or UNTRUSTED for each run


class ScriptedExecutor:
    def __init__(self, ledger: object, script: Script):
        self.ledger = ledger
        self.script = script
        self.notes: list[str] = []
        self.runs: list[m.Run] = []
        self.closed = False

    def run(self, run: m.Run, cwd: Path) -> m.Run:
        got = self.script(run)
        run.trust = m.Trust.CLEAN
        if got == FAIL:
            run.status, run.exit_code = m.RunStatus.FAILED, 2
            run.error = "exited with status 2: no such file"
            run.stderr_tail = "python3: can't open file 'nonexistent.py'\n"
        elif got == UNTRUSTED:
            run.status, run.trust = m.RunStatus.QUARANTINED, m.Trust.UNTRUSTED
        else:
            assert isinstance(got, float)
            run.status, run.value, run.exit_code = m.RunStatus.OK, got, 0
        self.ledger.put(run)  # type: ignore[attr-defined]
        self.runs.append(run)
        return run

    def hook(
        self,
        kind: m.HookKind,
        command: str,
        cwd: Path,
        *,
        round_id: str | None,
        variant_id: str | None,
    ) -> m.HookRecord:
        raise AssertionError("no hooks in a scripted test")

    def env(self, workload: str | None) -> dict[str, str]:
        return {}

    def flush(self, *also: object) -> None:
        if also:
            self.ledger.put(*also)  # type: ignore[attr-defined]

    def close(self) -> None:
        self.closed = True


def records(ledger: object, workloads: tuple[str, ...] = ("w",), variants: int = 1) -> tuple:
    """A session, a baseline and variants stored in a real ledger (no git behind them)."""
    contract = m.Contract(workloads=[m.Workload(name=n, command="true") for n in workloads])
    session = m.Session(title="t", repo="/nonexistent", contract=contract)
    snap = m.Snapshot(commit="0" * 40, ref="refs/gpuopt/snapshots/x")
    baseline = m.Baseline(
        id="b" * 12,
        session_id=session.id,
        snapshot=snap,
        environment=m.EnvironmentFingerprint(),
        contract_hash="h",
        reproducibility=m.Reproducibility.REPRODUCIBLE,
    )
    chosen = [
        m.Variant(session_id=session.id, name=f"v{i}", snapshot=snap) for i in range(variants)
    ]
    ledger.put(session, baseline, *chosen)  # type: ignore[attr-defined]
    return session, baseline, chosen


# ------------------------------------------------------------------------------ the round loop


@pytest.fixture
def ledger(tmp_path: Path):
    with Ledger.open(tmp_path / "ledger.db") as led:
        yield led


def _loop(
    ledger: Ledger,
    script: Script,
    *,
    variants: int = 1,
    min_blocks: int = 10,
    max_blocks: int = 30,
    stop_at: int | None = None,
) -> tuple[RoundLoop, ScriptedExecutor]:
    session, baseline, chosen = records(ledger, variants=variants)
    rnd = m.Round(
        session_id=session.id,
        baseline_id=baseline.id,
        variant_ids=[v.id for v in chosen],
        min_blocks=min_blocks,
        max_blocks=max_blocks,
    )
    ledger.put(rnd)
    trees = {arm: Path("/nonexistent") for arm in [BASELINE_ARM, *(v.id for v in chosen)]}
    plan = Plan(session, rnd, baseline, chosen, trees, 1, 0.02, min_blocks, max_blocks)
    executor = ScriptedExecutor(ledger, script)
    loop = RoundLoop(
        ledger,
        executor,
        plan,
        stopped=lambda: stop_at is not None and len(executor.runs) >= stop_at,
    )
    return loop, executor


def _noisy(effect: float, sd: float, seed: int) -> Script:
    rng = random.Random(seed)

    def script(run: m.Run) -> float:
        base = 1.0 + rng.gauss(0, sd)
        return base * (effect if run.arm != BASELINE_ARM else 1.0)

    return script


def test_a_clear_effect_stops_at_the_first_look_with_its_verdict(ledger):
    loop, ex = _loop(ledger, _noisy(1.10, 0.003, 1))
    loop.warm_up()
    assert loop.blocks() == "decided"
    assert loop.completed == 10  # the first planned look
    (c,) = loop.comparisons.values()
    assert c.verdict is m.Verdict.SLOWER and c.n == 10 and c.note == ""
    assert sum(r.warmup for r in ex.runs) == 2 and len(ex.runs) == 2 + 2 * 10
    stored = ledger.list(m.Comparison, round_id=loop.plan.rnd.id)
    assert [x.verdict for x in stored] == [m.Verdict.SLOWER]


def test_a_round_decides_only_at_its_planned_looks(ledger):
    # decided somewhere between looks: the round runs on to the next look, not beyond
    loop, _ = _loop(ledger, _noisy(1.03, 0.02, 5), min_blocks=10, max_blocks=30)
    loop.warm_up()
    why = loop.blocks()
    assert loop.design.looks == (10, 15, 20, 25, 30)
    assert loop.completed in loop.design.looks, (why, loop.completed)


def test_an_effect_inside_the_band_edge_is_inconclusive_with_the_smallest_effect(ledger):
    loop, _ = _loop(ledger, _noisy(1.02, 0.03, 3), max_blocks=15)
    loop.warm_up()
    assert loop.blocks() == "block limit reached"
    loop.update(final=True)
    (c,) = loop.comparisons.values()
    assert c.verdict is m.Verdict.INCONCLUSIVE  # on the band's edge: no verdict in 15 blocks
    assert c.note.startswith("not decidable at this noise within 15 blocks")
    assert "the smallest effect this round can resolve is" in c.note
    # beside the baseline's "a round of 30 blocks resolves ±6%", it says what it is made of
    assert "the ±2% band plus its interval's half-width" in c.note, c.note
    assert "this round's own paired noise" in c.note, c.note
    assert c.min_effect is not None and f"{c.min_effect:.1%}" in c.note  # stored, as said
    assert c.blocks_needed is None


def test_an_untrusted_run_reruns_its_block_and_three_strikes_leave_it_out(ledger):
    count = {"n": 0}

    def script(run: m.Run) -> float | str:
        count["n"] += 1
        if run.block == 2:
            return UNTRUSTED  # every attempt of block 2
        return 1.0

    loop, ex = _loop(ledger, script, min_blocks=3, max_blocks=4)
    loop.warm_up()
    loop.blocks()
    assert loop.skipped == [2] and loop.completed == 3
    assert [r.attempt for r in ex.runs if r.block == 2] == [0, 1, 2]
    assert any("block 2" in n for n in loop.notes)


def test_every_run_failing_stops_at_the_minimum_without_claiming_a_verdict(ledger):
    loop, _ = _loop(ledger, lambda run: FAIL, min_blocks=3, max_blocks=10)
    loop.warm_up()
    assert loop.blocks() == "no values: every comparison's runs failed"
    assert loop.completed == 3


def test_a_stop_request_ends_the_loop_after_the_current_run(ledger):
    loop, ex = _loop(ledger, _noisy(1.0, 0.01, 2), stop_at=7)
    loop.warm_up()
    assert loop.blocks() is None
    assert len(ex.runs) == 7 and loop.completed == 2  # 2 warm-ups, blocks 1 and 2, a half


def test_a_real_change_inside_the_band_is_measurable_in_words_with_its_interval(ledger, capsys):
    """Issue 21: a real 1.8% slowdown against ±2% was only ever INCONCLUSIVE. Now the round
    stops on MEASURABLE, keeps the interval that decided it with its confidence, and the
    round table says it in words."""
    from tui.commands.round_cmd import print_round

    loop, _ = _loop(ledger, _noisy(1.018, 0.006, 1))
    loop.warm_up()
    assert loop.blocks() == "decided"
    (c,) = loop.comparisons.values()
    assert c.verdict is m.Verdict.MEASURABLE, (c.ratio, c.ci_low, c.ci_high)
    assert c.confidence == pytest.approx(loop.design.change_confidence)
    assert c.ci_low is not None and c.ci_low > 1 and c.ci_high is not None and c.ci_high > 1.02
    rnd = loop.plan.rnd
    rnd.status = m.RoundStatus.COMPLETED
    print_round(rnd, [c], {c.variant_id: "v0"}, loop.plan.session)
    out = capsys.readouterr().out
    assert "MEASURABLE 1.8% slower (real, below the ±2% band)" in out, out
    assert "99.8% CI" in out and "the 99.8% one the verdict was decided on" in out
