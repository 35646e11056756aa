"""The round loop: warm-ups, then interleaved blocks until the design says stop.

It drives an `Executor` (session.conduct.executor) and keeps the paired estimates: it
judges and stores the comparisons at the planned looks and a few times a second between
(FRESH_BLOCKS says when); it reports progress after each of those blocks, and otherwise
at most PROGRESS_EVERY_S apart; it may stop only at the planned looks
of the sequential design (measure.sequential), at the block limit, or when the budget or
a stop request ends it. Nothing here starts a process itself, so a scripted executor
tests the round's logic.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from measure import schedule, sequential
from measure.stats import PairedEstimate, paired_log_ratios
from session import models as m
from session.conduct.common import BASELINE_ARM, Progress, ProgressFn, say
from session.conduct.executor import Executor
from session.conduct.undecided import blocks_text as _blocks
from session.conduct.undecided import undecided_words
from session.ledger_port import LedgerLike

MAX_ATTEMPTS = 3
COMMIT_EVERY_S = 0.25  # whole blocks are committed at most this far apart
# The paired statistics cost O(n^2) in the blocks (Walsh averages) and the forecast O(the
# block limit): judged after every block they came to most of a short command's run. So
# they are judged at every block of the first FRESH_BLOCKS (cheap there, and what a live
# view shows first), at every planned look, at the block limit and with each commit (at
# most COMMIT_EVERY_S apart); between, the progress shows the last ones judged.
FRESH_BLOCKS = 10
# Between those, progress is reported at most this far apart (and after the last block):
# ten a second is more than a person reads, where a block of `true` takes 2 ms and
# reporting each one (the ETA, the event, the line the CLI writes) was a thirtieth of a run.
PROGRESS_EVERY_S = 0.1
Key = tuple[str, str]  # (arm, workload)
_NO_VALUE = (m.RunStatus.FAILED, m.RunStatus.TIMEOUT, m.RunStatus.NO_METRIC)


@dataclass
class RoundState:
    """Values per (arm, workload) per completed block."""

    values: dict[tuple[str, str], dict[int, float]] = field(default_factory=dict)
    failed: dict[tuple[str, str], int] = field(default_factory=dict)
    untrusted: dict[tuple[str, str], int] = field(default_factory=dict)
    counted: dict[tuple[str, str], int] = field(default_factory=dict)  # runs of counted blocks
    last_error: dict[tuple[str, str], str] = field(default_factory=dict)
    fail_text: dict[tuple[str, str], str] = field(default_factory=dict)  # exception's last lines

    def add(self, run: m.Run, block: int) -> None:
        key = (run.arm, run.workload)
        self.counted[key] = self.counted.get(key, 0) + 1
        if run.status is m.RunStatus.OK and run.value is not None:
            self.values.setdefault(key, {})[block] = run.value
        elif run.status is m.RunStatus.QUARANTINED:
            self.untrusted[key] = self.untrusted.get(key, 0) + 1
        else:
            self.failed[key] = self.failed.get(key, 0) + 1
            why = run.error or f"{run.status.value}, exit {run.exit_code}"
            self.last_error[key] = why.strip().splitlines()[0] if why.strip() else why

    def never_ran(self, arm: str, workload: str) -> bool:
        """Every counted run of this arm and workload failed: no value will come."""
        key = (arm, workload)
        return self.counted.get(key, 0) > 0 and self.failed.get(key, 0) == self.counted[key]

    def failure_notes(self, label: dict[str, str]) -> list[str]:
        notes = []
        for (arm, workload), failed in self.failed.items():
            total = self.counted.get((arm, workload), 0)
            last = self.last_error.get((arm, workload), "")
            notes.append(
                f"{label.get(arm, arm)}/{workload}: {failed} of {total} runs gave no value"
                + (f" (last: {last})" if last else "")
                + (
                    "; every run failed: try its command by hand on that snapshot"
                    if failed == total
                    else ""
                )
            )
        return notes


@dataclass
class Plan:
    """What one round measures, and how. Fixed once made: what is derived from it is
    worked out once (asked for at every run and block, it was part of each run's cost)."""

    session: m.Session
    rnd: m.Round
    baseline: m.Baseline
    variants: Sequence[m.Variant]
    trees: dict[str, Path]  # arm -> where it runs
    seed: int
    threshold: float
    min_blocks: int
    max_blocks: int
    budget_s: float | None = None

    @functools.cached_property
    def names(self) -> list[str]:
        return [w.name for w in self.session.contract.workloads]

    @functools.cached_property
    def arms(self) -> list[str]:
        return [BASELINE_ARM, *(v.id for v in self.variants)]

    @functools.cached_property
    def label(self) -> dict[str, str]:
        return {BASELINE_ARM: BASELINE_ARM, **{v.id: v.name for v in self.variants}}

    @functools.cached_property
    def higher(self) -> bool:
        return self.session.contract.metric.direction is m.Direction.HIGHER

    @functools.cached_property
    def harnessed(self) -> set[str]:
        """Torch workloads: an arm that cannot give a value is dropped early."""
        return {
            w.name for w in self.session.contract.workloads if w.kind is not m.WorkloadKind.COMMAND
        }


@dataclass
class _Block:
    runs: list[m.Run]
    untrusted: bool = False
    interrupted: bool = False


class RoundLoop:
    """Runs a plan's warm-ups and blocks through an executor; the results stay on it."""

    def __init__(
        self,
        ledger: LedgerLike,
        executor: Executor,
        plan: Plan,
        *,
        progress: ProgressFn = None,
        stopped: Callable[[], bool] = lambda: False,
    ):
        self.ledger, self.executor, self.plan = ledger, executor, plan
        self.progress, self.stopped = progress, stopped
        self.rng = random.Random(plan.seed)
        self.design = sequential.Design.plan(plan.min_blocks, plan.max_blocks)
        self.state = RoundState()
        self.comparisons: dict[tuple[str, str], m.Comparison] = {}
        self.looks: dict[tuple[str, str], sequential.Look] = {}
        self.dropped: dict[tuple[str, str], str] = {}  # (variant arm, workload) -> why
        self.checks: dict[str, bool] = {}
        self.notes: list[str] = []
        self.skipped: list[int] = []
        self.completed = 0
        self.runs_done = 0
        self.stop_why: str | None = None
        self.t0 = time.monotonic()
        self.overhead = 0.0
        self._committed = self.t0  # when whole blocks were last committed
        self._said = -float("inf")  # when progress was last reported
        self._unsaid: tuple[int, list[Key], float] | None = None  # a block not reported yet
        self.stale = False
        self._judged_at = 0  # `completed` when the comparisons were last judged
        self._waiting: list[Key] = []  # as last judged
        self._shown: list[m.Comparison] = []  # the progress's copies, as last judged
        self._failed_checks: list[str] | None = None

    def _new_run(self, arm: str, workload: str, block: int, attempt: int, warm: bool) -> m.Run:
        p = self.plan
        return m.Run(
            session_id=p.session.id,
            round_id=p.rnd.id,
            baseline_id=p.baseline.id,
            arm=arm,
            workload=workload,
            block=block,
            attempt=attempt,
            warmup=warm,
        )

    def warm_up(self) -> None:
        """One excluded warm-up run per arm and workload."""
        p = self.plan
        for name in p.names:
            for arm in schedule.block_order(p.arms, self.rng):
                if self.stopped():
                    break
                warm = self.executor.run(self._new_run(arm, name, 0, 0, True), p.trees[arm])
                if arm != BASELINE_ARM and warm.status in _NO_VALUE and name in p.harnessed:
                    self.dropped[(arm, name)] = "its warm-up failed"
                    self.state.fail_text[(arm, name)] = _failure(warm)
        self.executor.flush()
        self.overhead = time.monotonic() - self.t0  # once per round: not a block's cost

    def blocks(self) -> str | None:
        """Run blocks until the round stops; the reason (None when stopped from outside)."""
        p = self.plan
        block = 0
        try:
            while block < p.max_blocks and not self.stopped():
                block += 1
                done = self._block(block)
                if self.stopped() and not done:
                    break
                if not done:
                    self.skipped.append(block)
                    self.notes.append(
                        f"block {block}: untrusted runs in {MAX_ATTEMPTS} attempts; left out"
                    )
                else:
                    self.completed += 1
                self.stop_why = self._after_block(block)
                if self.stop_why is not None:
                    break
        finally:
            p.rnd.blocks = self.completed
        if self._unsaid is not None:  # stopped from outside: the last block is reported
            self._say(*self._unsaid)
            self._unsaid = None
        return self.stop_why

    def _block(self, block: int) -> bool:
        """One block, attempted again after an untrusted run; whether it counts."""
        p = self.plan
        for attempt in range(MAX_ATTEMPTS):
            result = self._attempt(block, attempt)
            self.runs_done += len(result.runs)
            if result.interrupted:
                self.executor.flush()
                return False
            if not result.untrusted:
                for run in result.runs:
                    self.state.add(run, block)
                    if run.status in _NO_VALUE:
                        self.state.fail_text[(run.arm, run.workload)] = _failure(run)
                for v in p.variants:
                    for name in p.names:
                        key = (v.id, name)
                        if (
                            name in p.harnessed
                            and key not in self.dropped
                            and self.state.never_ran(*key)
                        ):
                            self.dropped[key] = "every run failed"
                return True
            self.executor.flush()
            _discard(self.ledger, result.runs)
            for run in result.runs:
                if run.trust is m.Trust.UNTRUSTED:
                    key = (run.arm, run.workload)
                    self.state.untrusted[key] = self.state.untrusted.get(key, 0) + 1
        return False

    def _attempt(self, block: int, attempt: int) -> _Block:
        p = self.plan
        out = _Block(runs=[])
        for name in p.names:
            for arm in schedule.block_order(p.arms, self.rng):
                if (arm, name) in self.dropped:
                    continue  # a FAILED arm: dropped from the later blocks (said in the notes)
                if self.stopped():
                    out.interrupted = True
                    return out
                run = self.executor.run(
                    self._new_run(arm, name, block, attempt, False), p.trees[arm]
                )
                out.runs.append(run)
                if run.trust is m.Trust.UNTRUSTED:
                    out.untrusted = True
                    return out  # the block is run again: no point finishing this attempt
        return out

    def update(self, final: bool = False) -> tuple[list[Key], list[Key]]:
        """Update every comparison; the keys that can still get values, and those of them
        still waiting for a verdict."""
        p = self.plan
        live: list[Key] = []
        waiting: list[Key] = []
        for v in p.variants:
            for name in p.names:
                key = (v.id, name)
                base = self.state.values.get((BASELINE_ARM, name), {})
                var = self.state.values.get(key, {})
                blocks = sorted(set(base) & set(var))
                d = paired_log_ratios([base[b] for b in blocks], [var[b] for b in blocks], p.higher)
                look = sequential.judge(d, p.threshold, self.design)
                shown = look.interval  # the interval that decided is the one kept and shown
                self.looks[key] = look
                c = self.comparisons.get(key) or m.Comparison(
                    round_id=p.rnd.id, variant_id=v.id, workload=name, n=0
                )
                c.n = shown.n
                c.ratio, c.ci_low, c.ci_high = shown.ratio, shown.ci_low, shown.ci_high
                c.confidence = look.confidence
                c.verdict = look.verdict
                c.blocks_needed = None if final or look.settled else look.blocks_needed
                c.note = "" if look.settled else undecided_words(look, shown, self.design, final)
                if len(d) < len(blocks):  # a zero or negative figure: no ratio, said
                    why = (
                        f"{len(blocks) - len(d)} of {_blocks(len(blocks))} gave a zero or "
                        "negative figure, which has no ratio (a ratio to zero is undefined)"
                    )
                    c.note = f"{why}; {c.note}" if c.note else why
                c.min_effect = None if look.settled else look.min_effect
                c.untrusted_runs = self.state.untrusted.get(key, 0)
                c.failed_runs = self.state.failed.get(key, 0)
                self.comparisons[key] = c
                no_values = shown.n == 0 and (
                    self.state.never_ran(*key) or self.state.never_ran(BASELINE_ARM, name)
                )
                if key not in self.dropped and not no_values:
                    live.append(key)
                    if not look.settled:
                        waiting.append(key)
        self._mark_failed()
        self._judged_at, self._waiting = self.completed, waiting
        self._shown = [c.model_copy() for c in self.comparisons.values()]
        return live, waiting

    def _after_block(self, block: int) -> str | None:
        p = self.plan
        now = time.monotonic()
        # Whole blocks only, at most COMMIT_EVERY_S apart and at every look: a commit
        # (synchronous=FULL, so an fsync) per block of a short command cost more than its
        # runs. What no commit took yet is stored when the round ends or stops.
        due = (
            now - self._committed >= COMMIT_EVERY_S
            or self.design.is_look(self.completed)
            or block >= p.max_blocks
            or self.completed == p.min_blocks
        )
        if due or self.completed <= FRESH_BLOCKS:
            live_keys, waiting = self.update()
        else:  # between looks: no stop can come of a verdict, only of no live comparison
            live_keys, waiting = self._live_keys(), self._waiting
        if due:
            # The round's count is set where it is stored (and when the blocks end): an
            # assignment is a validation, paid at every block of a short command.
            p.rnd.blocks = self.completed
            self.executor.flush(p.rnd, *self.comparisons.values())
            self._committed = now
        self.stale = not due  # blocks whose comparisons no commit holds yet
        elapsed = now - self.t0
        stop_why = self._stop_after(block, live_keys, waiting, elapsed)
        if (
            due
            or self.completed <= FRESH_BLOCKS
            or stop_why is not None
            or (now - self._said >= PROGRESS_EVERY_S)
        ):
            self._said, self._unsaid = now, None
            self._say(block, waiting, elapsed)
        else:
            self._unsaid = (block, waiting, elapsed)
        return stop_why

    def _live_keys(self) -> list[Key]:
        """The keys that can still get values (as update() gives them), without judging."""
        return [
            key
            for v in self.plan.variants
            for name in self.plan.names
            if (key := (v.id, name)) not in self.dropped
            and not self.state.never_ran(*key)
            and not self.state.never_ran(BASELINE_ARM, name)
        ]

    def _say(self, block: int, waiting: list[Key], elapsed: float) -> None:
        p = self.plan
        since = self.completed - self._judged_at  # blocks run since the last judgement
        live = [_still_waiting(self.looks[k], since) for k in waiting if k in self.looks]
        eta = schedule.eta_s(
            self.completed,
            p.max_blocks,
            elapsed - self.overhead,
            live,
            self.design.next_look(self.completed) if live else p.min_blocks,
        )
        if self._failed_checks is None:  # the checks ran before the blocks: known by now
            label = p.label
            self._failed_checks = [a for a in p.arms if self.checks.get(label.get(a, a)) is False]
        say(
            self.progress,
            Progress(
                "round",
                f"block {block} of at most {p.max_blocks}",
                block=block,
                max_blocks=p.max_blocks,
                runs_done=self.runs_done,
                runs_total=p.max_blocks * len(p.arms) * len(p.names),
                eta_s=eta,
                comparisons=list(self._shown),  # copied once per judgement, not per block
                failed_checks=list(self._failed_checks),
            ),
        )

    def _stop_after(
        self, block: int, live_keys: list[Key], waiting: list[Key], elapsed: float
    ) -> str | None:
        p = self.plan
        if self.completed >= p.min_blocks:
            if self.comparisons and not live_keys:
                return "no values: every comparison's runs failed"
            if not waiting and (self.design.is_look(self.completed) or not live_keys):
                return schedule.STOP_DECIDED
        if block >= p.max_blocks:
            return "block limit reached"
        if schedule.budget_spent(self.completed, elapsed, p.budget_s, self.overhead):
            return schedule.STOP_BUDGET
        return None

    def _mark_failed(self) -> None:
        """A dropped arm's comparison is FAILED (BROKEN when its check failed too), with the
        last lines of its exception."""
        label = self.plan.label
        for key, why in self.dropped.items():
            c = self.comparisons.get(key)
            if c is None:
                continue
            broken = self.checks.get(label.get(key[0], key[0])) is False
            c.verdict = m.Verdict.BROKEN if broken else m.Verdict.FAILED
            c.error = self.state.fail_text.get(key, "")[-4000:]
            c.note = f"{why}: dropped from later blocks of the round"
            c.blocks_needed = None

    def dropped_notes(self) -> list[str]:
        label = self.plan.label
        notes = []
        for (arm, name), why in self.dropped.items():
            text = self.state.fail_text.get((arm, name), "").strip().splitlines()
            last = f" (last: {text[-1].strip()[:300]})" if text else ""
            notes.append(
                f"{label.get(arm, arm)}/{name}: FAILED, {why}{last}; dropped from later blocks"
            )
        return notes


def _still_waiting(look: sequential.Look, since: int) -> PairedEstimate:
    """A waiting look's estimate for the ETA (a MEASURABLE beyond the band too), with the
    blocks it needed less those run since it was judged."""
    needed = look.blocks_needed
    return dataclasses.replace(
        look.estimate,
        verdict=m.Verdict.INCONCLUSIVE,
        blocks_needed=None if needed is None else max(0, needed - since),
    )


def _failure(run: m.Run) -> str:
    from session.timing import failure_text

    return failure_text(run)


def _discard(ledger: LedgerLike, runs: list[m.Run]) -> None:
    """Keep the runs of an abandoned block attempt, but out of the statistics."""
    changed = []
    for run in runs:
        if run.status is m.RunStatus.OK:
            run.status = m.RunStatus.QUARANTINED
            run.trust_reasons = [
                *run.trust_reasons,
                "its block was run again after an untrusted run",
            ]
            changed.append(run)
    if changed:
        ledger.put(*changed)
