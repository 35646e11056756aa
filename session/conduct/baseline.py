"""Recording a baseline: a snapshot, its reference results, and whether it reproduces itself.

The baseline runs every workload at least `runs` times (after warm-up) and then keeps going,
as nvbench does until its noise criterion is met, until its split-half check is decided or
`max_runs` or the time budget is reached. The check compares the first half of a
workload's runs with the second (measure.stats.split_half_check) at LOOK_CONFIDENCE, at a
few planned looks only (LOOKS_GROW apart), so that looking again and again does not turn
noise into a verdict. Three outcomes, per workload and for the baseline:

- reproducible: the halves are the SAME within the band;
- drifting: the halves differ beyond the band. A warning: a round goes on, since its
  interleaved, paired blocks cancel drift, but the baseline's absolute figures (its
  reference medians) are unreliable, and the record says so. It blocks a round only when the
  runs' telemetry names a cause (throttling, clocks changing, another process on the GPU:
  session.drift_cause), said with its repair;
- too noisy for this band: undecided when the runs ran out; it says the noise and the
  band a round can resolve at that noise (`round_band`, from the run-to-run noise a paired
  round sees), and a round may go on at a band the person chooses.

A workload whose first run fails is broken, not noisy: the baseline stops there.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from measure import gc_control, sequential, stats
from measure.fingerprint import collect
from measure.git import GitError, take_snapshot, unpin_on_failure
from measure.schedule import pace_eta_s
from measure.worktrees import Worktrees
from session import commands
from session import models as m
from session.conduct import recovery
from session.conduct.common import (
    BASELINE_ARM,
    BadInput,
    ConductError,
    Progress,
    ProgressFn,
    WorkloadBroken,
    band,
    cleanup_stale_worktrees,
    one_line,
    put_closing,
    say,
    snapshot_model,
    subdir,
    with_room,
)
from session.conduct.executor import Executor, ProcessExecutor
from session.drift_cause import Cause, telemetry_cause
from session.ledger_port import LedgerLike
from session.models import Outcome
from session.repository import ledger_inside_problem
from session.timing import failure_text

if TYPE_CHECKING:
    from measure.monitor import RunMonitor

__all__ = [
    "DEFAULT_MAX_RUNS",
    "DEFAULT_RUNS",
    "DRIFT_WARNING",
    "Judgement",
    "Outcome",
    "baseline_id",
    "baseline_words",
    "judge",
    "judge_baseline",
    "looks",
    "outcome",
    "outcome_text",
    "outcome_words",
    "record_baseline",
    "repair_words",
    "reset_procedure",
    "round_band",
    "stored_outcome",
    "supported_band",
]

# What `gpuopt baseline` says under a drifting baseline with no named cause.
DRIFT_WARNING = (
    "Drifting, with no cause the telemetry names: a round goes on, paired (its interleaved "
    "blocks cancel drift), and the record says this baseline's absolute figures are "
    "unreliable."
)
DEFAULT_RUNS = 10  # the minimum per workload
# No longer than a default round's design needs: its block limit (30). A round's verdicts
# rest on its own paired blocks; the baseline gives reference figures and a noise estimate,
# and a split-half still undecided at 30 runs is too noisy for the band at that noise.
DEFAULT_MAX_RUNS = 30
LOOK_CONFIDENCE = 0.99  # each look's interval; a handful of looks keep the total honest
LOOKS_GROW = 1.25  # the next look once the runs have grown by a quarter
_NO_VALUE = (m.RunStatus.FAILED, m.RunStatus.TIMEOUT, m.RunStatus.NO_METRIC)


@dataclass(frozen=True)
class Judgement:
    """One workload's split-half check, with the words that say it."""

    workload: str
    outcome: Outcome | None  # None: not decided yet, more runs may decide it
    runs: int
    threshold: float
    estimate: stats.PairedEstimate | None = None
    cv: float | None = None
    mad: float | None = None
    narrowest: float | None = None  # the band these halves would be SAME in
    failed: int = 0
    last_error: str = ""
    not_positive: float | None = None  # NOT_POSITIVE: one such figure, to show
    cause: Cause | None = None  # DRIFT_CAUSED: what the telemetry named
    resolvable: float | None = None  # the band a round resolves at this noise (round_band)

    def words(self) -> str:
        e, name = self.estimate, self.workload
        if self.outcome is Outcome.FAILING:
            return f"{name}: {self.failed} of {self.runs} runs gave no value ({self.last_error})"
        if self.outcome is Outcome.NOT_POSITIVE:
            return (
                f"{name}: {self.failed} of {self.runs} figures are zero or negative (e.g. "
                f"{self.not_positive:g}); a ratio to such a figure is undefined, so no round "
                "can compare variants on it: choose a metric whose figures are positive "
                "(a time, a rate)"
            )
        ratio = _ratio_text(e)
        if self.outcome is Outcome.REPRODUCIBLE:
            return f"{name}: reproducible, halves SAME within {band(self.threshold)}{ratio}"
        if self.outcome in (Outcome.DRIFTING, Outcome.DRIFT_CAUSED):
            assert e is not None and e.ratio is not None
            later = "later" if e.ratio > 1 else "earlier"
            head = (
                f"{name}: drifting, the halves differ beyond {band(self.threshold)}{ratio}; "
                f"the {later} half was slower"
            )
            if self.cause is not None:
                return (
                    f"{head}. The telemetry names a cause: {self.cause.words}. Repair: "
                    f"{self.cause.repair}; then record the baseline again"
                )
            return (
                f"{head}. No telemetry names a cause (no throttling, clock change or other "
                "process on the GPU was seen), so this is a warning: a round goes on, its "
                "interleaved, paired blocks cancel drift, but this baseline's absolute "
                "figures are unreliable"
            )
        if self.outcome is Outcome.TOO_FEW:
            least = stats.min_split_runs(LOOK_CONFIDENCE)
            return (
                f"{name}: {self.runs} runs are too few to compare its two halves at "
                f"{LOOK_CONFIDENCE:.0%}; record it with at least {least} runs "
                f"(--runs {least} --max-runs {max(least, DEFAULT_MAX_RUNS)})"
            )
        noise = self.noise_words()
        advised = self.advised_band()
        fit = (
            f"; a round of {ROUND_BLOCKS} blocks resolves {band(advised)} at this noise "
            "(the narrowest band, from the baseline's run-to-run noise; a round's smallest "
            "effect it can resolve adds its interval's half-width to its band)"
            if self.resolvable is not None
            else ""
        )
        head = "too noisy" if self.outcome is Outcome.TOO_NOISY else "undecided"
        return (
            f"{name}: {head} for {band(self.threshold)} after {self.runs} runs{ratio}; "
            f"{noise}{fit}. Options: a wider band (--threshold {advised:.3g}), more runs "
            "(--max-runs), a prepare command, pinning the workload to a quiet core (taskset)"
        )

    def advised_band(self) -> float:
        """The band to advise: one a round can resolve at this noise (from the run-to-run
        noise a paired round sees), never one only the unpaired halves would need."""
        if self.resolvable is not None:
            return max(_round_up(self.resolvable), _round_up(self.threshold + 0.005))
        return _round_up(self.narrowest or self.threshold * 2)

    def noise_words(self) -> str:
        if self.cv is None or self.mad is None:
            return "run-to-run noise unknown"
        return f"run-to-run noise CV {self.cv:.1%}, MAD {self.mad:.1%}"


def _round_up(x: float | None) -> float:
    """A band people can type: up to the next 0.5%."""
    if x is None:
        return 0.05
    return min(0.95, math.ceil(x * 200 - 1e-9) / 200)


def _ratio_text(e: stats.PairedEstimate | None) -> str:
    if e is None or e.ratio is None:
        return ""
    if e.ci_low is None or e.ci_high is None:
        return f" (second half / first {e.ratio:.3f})"
    return (
        f" (second half / first {e.ratio:.3f}, {LOOK_CONFIDENCE:.0%} CI "
        f"{e.ci_low:.3f}–{e.ci_high:.3f})"
    )


def judge(
    workload: str,
    values: Sequence[float],
    threshold: float,
    *,
    higher: bool = False,
    final: bool = False,
    failed: Sequence[str] = (),
    reasons: Sequence[str] = (),
) -> Judgement:
    """One workload's check on its values in run order; `final`: no more runs will come,
    so an undecided check is too noisy for the band. `reasons`: the telemetry's trust
    reasons of its runs, which may name a cause for a drift."""
    runs = len(values) + len(failed)
    if failed:
        return Judgement(
            workload, Outcome.FAILING, runs, threshold, failed=len(failed), last_error=failed[-1]
        )
    bad = [v for v in values if not v > 0]  # NaN too: no log, no ratio
    if bad:
        return Judgement(
            workload, Outcome.NOT_POSITIVE, runs, threshold, failed=len(bad), not_positive=bad[0]
        )
    est = stats.split_half_check(
        values, threshold=threshold, higher_is_better=higher, confidence=LOOK_CONFIDENCE
    )
    spread = stats.noise(values)
    cv, mad = spread if spread is not None else (None, None)
    outcome: Outcome | None = None
    cause: Cause | None = None
    if est.verdict is stats.SAME:
        outcome = Outcome.REPRODUCIBLE
    elif est.verdict in (stats.FASTER, stats.SLOWER):
        cause = telemetry_cause(reasons)
        outcome = Outcome.DRIFTING if cause is None else Outcome.DRIFT_CAUSED
    elif final:
        short = est.ci_low is None and len(values) < stats.min_split_runs(LOOK_CONFIDENCE)
        outcome = Outcome.TOO_FEW if short else Outcome.TOO_NOISY
    return Judgement(
        workload,
        outcome,
        runs,
        threshold,
        est,
        cv,
        mad,
        stats.narrowest_band(est.ci_low, est.ci_high),
        cause=cause,
        resolvable=round_band(values),
    )


# A default round: the band it can resolve is judged at its block limit and its confidence.
ROUND_BLOCKS = 30
_ROUND_DESIGN = sequential.Design.plan(10, ROUND_BLOCKS)


def round_band(values: Sequence[float], blocks: int = ROUND_BLOCKS) -> float | None:
    """The narrowest band a paired round of `blocks` blocks can resolve (a no-change
    variant read SAME) at the noise of these runs, in run order.

    A round pairs neighbouring runs, so what it sees is the short-term noise: from the
    successive differences of the log values (von Neumann), which a slow drift or a spell
    barely moves, unlike the halves' unpaired interval (that one advised ±77.5% where the
    round resolved 5.6%). A block's d is the difference of two such runs, so its spread is
    the successive differences' own; the interval's half-width at the limit is
    z * sd_d / sqrt(blocks) at the design's confidence."""
    logs = [math.log(v) for v in values if v > 0 and math.isfinite(v)]
    if len(logs) < 3:
        return None
    diffs = [b - a for a, b in itertools.pairwise(logs)]
    sd_d = math.sqrt(statistics.fmean(d * d for d in diffs))
    z = statistics.NormalDist().inv_cdf(0.5 + _ROUND_DESIGN.confidence / 2)
    return math.expm1(z * sd_d / math.sqrt(blocks))


def overall(judgements: Sequence[Judgement]) -> Outcome:
    """The baseline's outcome: the worst of its workloads'."""
    for o in (
        Outcome.FAILING,
        Outcome.NOT_POSITIVE,
        Outcome.DRIFT_CAUSED,
        Outcome.DRIFTING,
        Outcome.TOO_NOISY,
        Outcome.TOO_FEW,
    ):
        if any(j.outcome is o for j in judgements):
            return o
    return Outcome.REPRODUCIBLE


def looks(runs: int, max_runs: int) -> list[int]:
    """The run counts at which the check is judged: the minimum, then each time the runs
    have grown by LOOKS_GROW (even counts: two equal halves), and the maximum."""
    out = [runs]
    while out[-1] < max_runs:
        nxt = max(out[-1] + 2, math.ceil(out[-1] * LOOKS_GROW))
        nxt += nxt % 2
        out.append(min(nxt, max_runs))
    return out


# ------------------------------------------------------------------------------ the loop


@dataclass
class Measured:
    """What the baseline loop measured, per workload, in run order."""

    values: dict[str, list[float]]
    failed: dict[str, list[str]]
    judgements: dict[str, Judgement] = field(default_factory=dict)
    reasons: dict[str, list[str]] = field(default_factory=dict)  # telemetry's, per workload
    done: int = 0
    interrupted: bool = False


MakeRun = Callable[[str, int, bool], m.Run]  # (workload, index, warm-up) -> a new run


def measure(
    executor: Executor,
    make_run: MakeRun,
    tree: Path,
    names: Sequence[str],
    *,
    runs: int,
    warmup: int,
    max_runs: int,
    threshold: float,
    higher: bool = False,
    budget_s: float | None = None,
    progress: ProgressFn = None,
    stopped: Callable[[], bool] = lambda: False,
) -> Measured:
    """Warm up, run each workload `runs` times, then more until every check is decided
    (or max_runs, or the budget). Raises WorkloadBroken when a workload's first run fails."""
    out = Measured({n: [] for n in names}, {n: [] for n in names})
    t0 = time.monotonic()
    planned = looks(runs, max_runs)
    index = 0
    for _ in range(warmup):
        for name in names:
            if stopped():
                out.interrupted = True
                return out
            run = executor.run(make_run(name, index, True), tree)
            out.done += 1
            if run.status in _NO_VALUE:
                executor.flush()  # the broken run is kept
            _broken(name, run)
            say(progress, Progress("baseline", f"{name}: warm-up", runs_done=out.done))
        index += 1
    open_ = list(names)
    count = 0
    for look in planned:
        while count < look:
            for name in open_:
                if stopped():
                    out.interrupted = True
                    return out
                run = executor.run(make_run(name, index, False), tree)
                out.done += 1
                out.reasons.setdefault(name, []).extend(run.trust_reasons)
                if run.status is m.RunStatus.OK and run.value is not None:
                    out.values[name].append(run.value)
                elif run.status is not m.RunStatus.QUARANTINED:
                    if count == 0 and warmup == 0:
                        executor.flush()
                        _broken(name, run)
                    out.failed[name].append(run.error or run.status.value)
                # the minimum's runs, then at most those left to max_runs (a look may
                # end them sooner): the bar agrees with the words
                total = out.done + ((runs if count < runs else max_runs) - count - 1) * len(open_)
                say(
                    progress,
                    Progress(
                        "baseline",
                        f"{name}: run {count + 1} of {runs}"
                        if count < runs
                        else f"{name}: run {count + 1} of at most {max_runs}, until decided",
                        runs_done=out.done,
                        runs_total=total,
                        eta_s=pace_eta_s(time.monotonic() - t0, out.done, total),
                    ),
                )
            executor.flush()  # one commit per step: a run of each open workload
            index += 1
            count += 1
        final = look == planned[-1]
        elapsed = time.monotonic() - t0
        per_step = elapsed / max(1, count)
        if budget_s is not None and elapsed + per_step * (_next(planned, look) - count) > budget_s:
            final = True
        for name in list(open_):
            j = judge(
                name,
                out.values[name],
                threshold,
                higher=higher,
                final=final,
                failed=out.failed[name],
                reasons=out.reasons.get(name, ()),
            )
            out.judgements[name] = j
            if j.outcome is not None:
                open_.remove(name)
        if not open_ or final:
            break
    return out


def _next(planned: list[int], look: int) -> int:
    later = [p for p in planned if p > look]
    return later[0] if later else look


def _broken(name: str, run: m.Run) -> None:
    """The first run of a workload failed: it is broken, and nothing more is run."""
    if run.status not in _NO_VALUE:
        return

    what = "warm-up run" if run.warmup else "first run"
    code = f"exit {run.exit_code}" if run.exit_code is not None else run.status.value
    tail = failure_text(run).strip()
    raise WorkloadBroken(
        f"{name}: its {what} failed ({code}): the workload is broken, not noisy; "
        f"nothing more was run{': ' + tail if tail else ''}"
    )


# ------------------------------------------------------------------------------ records


def _fingerprint(session: m.Session) -> m.EnvironmentFingerprint:
    return m.EnvironmentFingerprint(**collect(python=session.contract.python))


def baseline_id(commit: str, environment: m.EnvironmentFingerprint, contract_hash: str) -> str:
    """Short stable hash of what defines a baseline: code, machine and contract."""
    text = f"{commit}\n{environment.stable_hash()}\n{contract_hash}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def reset_procedure(session: m.Session, snapshot: m.Snapshot) -> str:
    """How to return to the baseline's snapshot by hand: lines to paste, every value
    shell-quoted (session.commands)."""

    return commands.reset_procedure(
        session.repo,
        snapshot.id,
        snapshot.commit,
        snapshot.ref,
        session.contract.hooks,
        commands.subdir_of(session.repo),
    )


def _detail(judgements: Sequence[Judgement], threshold: float) -> str:
    return "; ".join(
        [outcome_text(overall(judgements), threshold), *(j.words() for j in judgements)]
    )


def outcome_text(outcome: Outcome, threshold: float) -> str:
    """The outcome with its band, in words: "too noisy for ±2%"."""
    if outcome is Outcome.TOO_NOISY:
        return f"too noisy for {band(threshold)}"
    if outcome is Outcome.TOO_FEW:
        return f"too few runs to judge at {band(threshold)}"
    if outcome in (Outcome.FAILING, Outcome.NOT_POSITIVE):
        return outcome.value
    if outcome is Outcome.DRIFTING:
        return f"drifting at {band(threshold)} (a warning: its absolute figures are unreliable)"
    return f"{outcome.value} at {band(threshold)}"


def outcome_words(outcome: Outcome | None, threshold: float) -> str:
    """The one wording of a baseline's outcome that every screen and command shows:
    "reproducible at ±2%", "too noisy for ±2%", "not reproducible: drifting at ±2%"."""
    if outcome is None:
        return "not judged"
    words = outcome_text(outcome, threshold)
    if outcome is Outcome.NOT_POSITIVE:
        return f"not comparable: {words} (ratios to them are undefined)"
    return f"not reproducible: {words}" if outcome.blocks_round else words


def repair_words(outcome: Outcome) -> str:
    """What to do about a baseline whose outcome blocks a round."""
    if outcome is Outcome.NOT_POSITIVE:
        return (
            "choose a metric whose figures are positive (a time, a rate) in the contract "
            "and record the baseline again"
        )
    if outcome is Outcome.DRIFT_CAUSED:
        return (
            "remove the cause the telemetry names (let the GPU cool down, lock its clocks, "
            "stop the other process on it) and record the baseline again"
        )
    return (
        "repair the setup (warm-up, a prepare command that resets state, a quieter machine, "
        "or the runs that fail) and record the baseline again"
    )


def stored_outcome(baseline: m.Baseline) -> Outcome | None:
    """The outcome the baseline was recorded with, a stored value (no runs read, no words
    parsed): for a list of sessions. Rows from before it was stored were given theirs by
    the ledger's migration m004_baseline_outcome, once."""
    return baseline.judged_outcome()


def baseline_words(baseline: m.Baseline, contract_threshold: float) -> str:
    """A stored baseline's outcome in the words of `outcome_words`, at its own band."""
    delta = contract_threshold if baseline.threshold is None else baseline.threshold
    return outcome_words(stored_outcome(baseline), delta)


def supported_band(judgements: Sequence[Judgement]) -> float | None:
    """The band, typed as people would, that a round can resolve at every workload's
    noise (`Judgement.advised_band`): what a round on a too-noisy baseline may use."""
    found = [j.advised_band() for j in judgements if j.resolvable is not None or j.narrowest]
    if not found or len(found) < len(judgements):
        return None
    return max(found)


def judge_baseline(
    ledger: LedgerLike, session: m.Session, baseline: m.Baseline, threshold: float
) -> list[Judgement]:
    """The baseline's checks from its stored runs, at `threshold`: what a round at that
    band may rely on (a baseline too noisy for ±2% can be reproducible at ±5%)."""
    higher = session.contract.metric.direction is m.Direction.HIGHER
    values: dict[str, list[float]] = {w.name: [] for w in session.contract.workloads}
    failed: dict[str, list[str]] = {w.name: [] for w in session.contract.workloads}
    reasons: dict[str, list[str]] = {w.name: [] for w in session.contract.workloads}
    for run in ledger.list(m.Run, baseline_id=baseline.id):
        if run.round_id is not None or run.warmup or run.workload not in values:
            continue
        reasons[run.workload].extend(run.trust_reasons)
        if run.status is m.RunStatus.OK and run.value is not None:
            values[run.workload].append(run.value)
        elif run.status is not m.RunStatus.QUARANTINED:
            failed[run.workload].append(run.error or run.status.value)
    return [
        judge(
            n, values[n], threshold, higher=higher, final=True, failed=failed[n], reasons=reasons[n]
        )
        for n in values
    ]


def outcome(
    ledger: LedgerLike, session: m.Session, baseline: m.Baseline, threshold: float | None = None
) -> Outcome | None:
    """The baseline's outcome at `threshold` (default the band it was judged at); None
    when it was never judged."""
    if baseline.reproducibility is m.Reproducibility.UNJUDGED:
        return None
    if threshold is None or threshold == baseline.threshold:
        return stored_outcome(baseline)  # as recorded, at its own band
    return overall(judge_baseline(ledger, session, baseline, threshold))


def record_baseline(
    ledger: LedgerLike,
    session: m.Session,
    *,
    runs: int = DEFAULT_RUNS,
    warmup: int = 1,
    max_runs: int | None = None,
    threshold: float | None = None,
    budget_s: float | None = None,
    progress: ProgressFn = None,
    stop: threading.Event | None = None,
    monitor: RunMonitor | None = None,
) -> m.Baseline:
    """Snapshot the repository and run every workload at least `runs` times (up to
    `max_runs`, default the larger of DEFAULT_MAX_RUNS and `runs`) until its split-half
    check is decided at `threshold` (default the contract's)."""

    if runs < 2:
        raise BadInput("a baseline needs at least 2 runs per workload")
    top = max(DEFAULT_MAX_RUNS, runs) if max_runs is None else max_runs
    if top < runs:
        raise BadInput(f"max runs ({top}) is below the minimum of runs ({runs})")
    if warmup < 0:
        raise BadInput("warm-up runs cannot be negative")
    delta = session.contract.threshold if threshold is None else threshold
    if not 0 < delta < 1:
        raise BadInput("the threshold must lie between 0 and 1 (e.g. 0.02 for 2%)")
    if budget_s is not None and not 0 < budget_s < math.inf:
        raise BadInput("the time budget must be positive")
    inside = ledger_inside_problem(ledger.path, session.repo)
    if inside:
        raise BadInput(inside)
    # A baseline that fails leaves no snapshot ref; an interrupted one keeps its runs and
    # its ref.
    with unpin_on_failure(keep=(KeyboardInterrupt,)):
        return _record(ledger, session, runs, warmup, top, delta, budget_s, progress, stop, monitor)


def _record(
    ledger: LedgerLike,
    session: m.Session,
    runs: int,
    warmup: int,
    max_runs: int,
    threshold: float,
    budget_s: float | None,
    progress: ProgressFn,
    stop: threading.Event | None,
    monitor: RunMonitor | None,
) -> m.Baseline:
    executor = ProcessExecutor(ledger, session, monitor)
    executor.batch = True
    cleanup_stale_worktrees(session.repo)
    say(progress, Progress("snapshot", f"snapshot of {session.repo}"))
    try:
        snap = snapshot_model(take_snapshot(session.repo))
    except GitError as exc:
        raise ConductError(str(exc)) from None
    env = _fingerprint(session)
    contract_hash = session.contract.stable_hash()
    bid = baseline_id(snap.commit, env, contract_hash)
    if ledger.get(m.Baseline, bid) is not None:  # the same commit twice: keep both records
        bid = baseline_id(snap.commit + snap.id, env, contract_hash)
    baseline = m.Baseline(
        id=bid,
        session_id=session.id,
        snapshot=snap,
        environment=env,
        contract_hash=contract_hash,
        runs_per_workload=runs,
        reset_procedure=reset_procedure(session, snap),
        reproducibility_detail="being measured",
        measured_by=recovery.owner(),
    )
    recovery.recover_stale(ledger)  # what a gone process left open; room to close this one
    ledger.put(baseline)
    names = [w.name for w in session.contract.workloads]
    higher = session.contract.metric.direction is m.Direction.HIGHER
    hooks = session.contract.hooks
    got: Measured | None = None
    done = [0]
    least = len(names) * (runs + warmup)  # the runs planned before any look

    def make_run(name: str, index: int, warm: bool) -> m.Run:
        done[0] += 1
        return m.Run(
            session_id=session.id,
            baseline_id=bid,
            arm=BASELINE_ARM,
            workload=name,
            block=index,
            warmup=warm,
        )

    try:
        with Worktrees(session.repo) as wts:
            tree = wts.add(BASELINE_ARM, snap.commit) / subdir(session)
            if hooks.setup:
                say(progress, Progress("setup", f"setup: {hooks.setup}"))
                rec = executor.hook(
                    m.HookKind.SETUP, hooks.setup, tree, round_id=None, variant_id=None
                )
                if rec.exit_code != 0:
                    raise ConductError(f"the setup command failed (exit {rec.exit_code})")
            try:
                with gc_control.frozen_heap():  # full collections walk the runs' own
                    got = measure(
                        executor,
                        make_run,
                        tree,
                        names,
                        runs=runs,
                        warmup=warmup,
                        max_runs=max_runs,
                        threshold=threshold,
                        higher=higher,
                        budget_s=budget_s,
                        progress=progress,
                        stopped=lambda: stop is not None and stop.is_set(),
                    )
            finally:
                if hooks.cleanup:
                    say(progress, Progress("cleanup", f"cleanup: {hooks.cleanup}"))
                    executor.hook(
                        m.HookKind.CLEANUP, hooks.cleanup, tree, round_id=None, variant_id=None
                    )
    except BaseException as exc:
        # Never left "being measured": interrupted, or failed with the reason.
        if isinstance(exc, KeyboardInterrupt):
            baseline.reproducibility_detail = f"interrupted after {done[0]} of {least} runs"
        else:
            baseline.reproducibility_detail = f"failed after {done[0]} runs: {one_line(exc)}"
        baseline.measured_by = None
        put_closing(ledger, baseline)
        if isinstance(exc, GitError):
            raise ConductError(str(exc)) from None
        raise
    finally:
        executor.close()
    assert got is not None
    baseline.reference = {n: statistics.median(v) for n, v in got.values.items() if v}
    baseline.runs_per_workload = max(
        runs,
        *(len(v) + len(f) for v, f in zip(got.values.values(), got.failed.values(), strict=True)),
    )
    if got.interrupted:
        baseline.reproducibility = m.Reproducibility.UNJUDGED
        baseline.reproducibility_detail = f"interrupted after {got.done} of {least} runs"
    else:
        judged = [got.judgements[n] for n in names]
        outcome = overall(judged)
        baseline.reproducibility = {
            Outcome.REPRODUCIBLE: m.Reproducibility.REPRODUCIBLE,
            Outcome.TOO_NOISY: m.Reproducibility.TOO_NOISY,
            Outcome.TOO_FEW: m.Reproducibility.TOO_NOISY,  # undecided, as too noisy: warns
        }.get(outcome, m.Reproducibility.NOT_REPRODUCIBLE)
        baseline.outcome = outcome
        baseline.threshold = threshold
        baseline.reproducibility_detail = "; ".join([_detail(judged, threshold), *executor.notes])
    baseline.measured_by = None
    with_room(ledger, lambda: ledger.put(baseline))  # a full disk: the reserve's room
    say(
        progress,
        Progress(
            "done",
            f"baseline {bid}: {_outcome_word(got, threshold)}",
            runs_done=got.done,
            runs_total=got.done,
        ),
    )
    return baseline


def _outcome_word(got: Measured, threshold: float) -> str:
    if got.interrupted:
        return "not judged (interrupted)"
    return outcome_text(overall(list(got.judgements.values())), threshold)
