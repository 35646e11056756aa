"""A round: the baseline and variants measured together, interleaved, from one baseline.

The baseline and each variant are checked out once; setup runs once per arm, the
contract's check once per variant; then the round loop (session.conduct.loop) runs the
warm-ups and blocks. At the end the baseline measured in the round is compared with its
reference runs (against the reference's own noise), and the round says what to do next.
"""

from __future__ import annotations

import math
import random
import shlex
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from measure import gc_control, stats
from measure.git import GitError
from measure.runner import run_hook
from measure.worktrees import Worktrees
from session import gpus, timing, torch_checks, torch_inputs
from session import models as m
from session.conduct import baseline as baseline_mod
from session.conduct.common import (
    BASELINE_ARM,
    BadInput,
    ConductError,
    GateRefused,
    Progress,
    ProgressFn,
    band,
    cleanup_stale_worktrees,
    one_line,
    put_closing,
    say,
    subdir,
    tail,
    with_room,
)
from session.conduct.executor import Executor, ProcessExecutor, needs_torch
from session.conduct.loop import Plan, RoundLoop
from session.conduct.recovery import busy, live_round, open_round
from session.ledger_port import LedgerLike
from session.variants.resolve import resolve_variants

if TYPE_CHECKING:
    from measure.monitor import RunMonitor

__all__ = ["baseline_check", "gate_round", "run_round"]

BASELINE_CHECK_CONFIDENCE = 0.95


def gate_round(
    ledger: LedgerLike, session: m.Session, threshold: float | None = None
) -> m.Baseline:
    """The baseline a round compares against, at the round's band (default the
    contract's). GateRefused when there is none, it was never judged, or it drifts or
    fails at that band; a baseline too noisy for the band lets the round go on (said)."""
    baseline = ledger.latest_baseline(session.id)
    if baseline is None:
        raise GateRefused("no baseline yet: record one with `gpuopt baseline` first")
    if baseline.reproducibility is m.Reproducibility.UNJUDGED:
        why = baseline.reproducibility_detail or "not judged"
        if why == "being measured":
            why = "its measurement never finished"
        raise GateRefused(f"baseline {baseline.id} was not judged ({why}): record it again")
    delta = session.contract.threshold if threshold is None else threshold
    if not _held_at(baseline, delta):
        judged = baseline_mod.judge_baseline(ledger, session, baseline, delta)
        blocking = [j for j in judged if j.outcome is not None and j.outcome.blocks_round]
        if blocking:
            again = shlex.join(["gpuopt", "baseline", session.id])
            raise GateRefused(
                f"baseline {baseline.id} is "
                f"{baseline_mod.outcome_words(baseline_mod.overall(blocking), delta)}: "
                + "; ".join(j.words() for j in blocking)
                + f"; to record it again: {again}"
            )
    found = live_round(ledger, session)
    if found is not None:  # said before telemetry starts; checked again when it is recorded
        raise busy(session, found)
    return baseline


def _held_at(baseline: m.Baseline, threshold: float) -> bool:
    """Reproducible as recorded, at a band no wider than this round's (so no judging
    again from its runs)."""
    ok = baseline.reproducibility is m.Reproducibility.REPRODUCIBLE
    return ok and (baseline.threshold is None or baseline.threshold <= threshold)


def baseline_noise_notes(
    ledger: LedgerLike, session: m.Session, baseline: m.Baseline, threshold: float
) -> list[str]:
    """What a round at `threshold` should say about a baseline too noisy for it."""
    if _held_at(baseline, threshold):
        return []
    judged = baseline_mod.judge_baseline(ledger, session, baseline, threshold)
    notes = []
    for j in judged:
        if j.outcome is None or not j.outcome.warns:
            continue
        if j.outcome is baseline_mod.Outcome.DRIFTING:
            notes.append(
                f"{BASELINE_UNRELIABLE}: it drifted when recorded ({j.words()}); this round's "
                "paired verdicts compare the arms within the round and do not rest on its "
                "reference figures"
            )
            continue
        notes.append(
            f"the baseline is {baseline_mod.outcome_text(j.outcome, threshold)} ({j.words()}); "
            "this round's paired verdicts do not rest on the baseline's halves, but expect "
            "INCONCLUSIVE ones at this band"
        )
    return notes


# What the round and the record say of a drifting baseline (the words are searched for).
BASELINE_UNRELIABLE = "the baseline's absolute figures are unreliable"


def baseline_check(
    rnd: m.Round,
    reference: dict[str, list[float]],
    in_round: dict[str, list[float]],
    threshold: float,
    session_id: str,
    notes: list[str],
    drifting: bool = False,
) -> None:
    """Compare the baseline measured in the round with its reference runs, unpaired (the
    Moses interval of the shift, as the baseline's own check): "not reproduced" only when
    the interval lies wholly beyond the band, so a round is flagged for a drift the
    reference's own noise cannot explain (false alarms at most 2.5% when nothing moved).
    With `drifting` (the baseline drifted when recorded, no cause named) its reference
    figures are unreliable: a difference from them is said, and untrusts nothing."""
    ratios: dict[str, float] = {}
    flagged: list[str] = []
    for name, vals in in_round.items():
        ref = reference.get(name) or []
        if not vals or not ref:
            continue

        logs_ref = [math.log(v) for v in ref if v > 0]
        logs_now = [math.log(v) for v in vals if v > 0]
        if not logs_ref or not logs_now:  # zero or negative figures have no ratio
            notes.append(
                f"baseline check of {name}: not made, its figures are zero or negative "
                "(a ratio to them is undefined)"
            )
            continue
        iv = stats.shift_interval(logs_ref, logs_now, BASELINE_CHECK_CONFIDENCE)
        if iv is None:
            ratios[name] = math.exp(
                stats.hodges_lehmann([y - x for x in logs_ref for y in logs_now])
            )
            continue
        est, lo, hi = (math.exp(x) for x in iv)
        ratios[name] = est
        if stats.verdict_for(lo, hi, threshold) in (stats.FASTER, stats.SLOWER):
            flagged.append(
                f"{name} ran at {est:.3f}× its reference ({BASELINE_CHECK_CONFIDENCE:.0%} CI "
                f"{lo:.3f}–{hi:.3f}, beyond {band(threshold)} of the reference's own noise)"
            )
    if not ratios:
        rnd.baseline_check, rnd.baseline_reproduced = None, None
        return
    worst = max(ratios, key=lambda n: abs(ratios[n] - 1.0))
    rnd.baseline_check = ratios[worst]
    rnd.baseline_reproduced = not flagged
    rnd.summary["baseline_check"] = ratios
    if drifting:
        rnd.summary["baseline_reference_unreliable"] = True
        if flagged:
            rnd.baseline_reproduced = None  # against an unreliable reference: undecided
            notes.append(
                f"baseline check of round {rnd.number}: " + "; ".join(flagged) + f". "
                f"{BASELINE_UNRELIABLE[0].upper()}{BASELINE_UNRELIABLE[1:]} (it drifted when "
                "recorded), so this difference untrusts no verdict: the paired verdicts "
                "compare the arms within this round"
            )
        return
    if flagged:
        again = shlex.join(["gpuopt", "baseline", session_id])
        redo = shlex.join(["gpuopt", "round", session_id])
        notes.append(
            f"baseline not reproduced in round {rnd.number}: " + "; ".join(flagged) + ". "
            "The paired verdicts compare the arms within this round and do not use the "
            "reference; what moved is the machine or the baseline since it was recorded, "
            f"so its reference figures no longer describe it. Next: record the baseline "
            f"again ({again}) and re-run the round ({redo}) before keeping a variant"
        )


def _reference_values(ledger: LedgerLike, baseline: m.Baseline) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for run in ledger.list(m.Run, baseline_id=baseline.id):
        ok = run.status is m.RunStatus.OK and run.value is not None
        if run.round_id is None and not run.warmup and ok:
            assert run.value is not None
            out.setdefault(run.workload, []).append(run.value)
    return out


def run_round(
    ledger: LedgerLike,
    session: m.Session,
    *,
    variants: Sequence[str] | None = None,
    min_blocks: int = 10,
    max_blocks: int = 30,
    threshold: float | None = None,
    budget_s: float | None = None,
    seed: int | None = None,
    progress: ProgressFn = None,
    stop: threading.Event | None = None,
    monitor: RunMonitor | None = None,
    keep_outputs: bool = False,
    round_id: str | None = None,
) -> m.Round:
    """Measure the baseline and variants together, interleaved, until decided; the outputs
    the checks saved are removed at the end unless `keep_outputs`.

    `round_id`: the id the round is recorded under (a Slurm job measures the round its
    login side numbered; session.cluster), else a new one."""

    contract = session.contract
    delta = threshold if threshold is not None else contract.threshold
    if not 0 < delta < 1:
        raise BadInput("the threshold must lie between 0 and 1 (e.g. 0.02 for 2%)")
    baseline = gate_round(ledger, session, delta)
    chosen = resolve_variants(ledger, session, variants)
    if min_blocks < 2 or max_blocks < min_blocks:
        raise BadInput("blocks: need 2 <= min-blocks <= max-blocks")
    if budget_s is not None and not 0 < budget_s < math.inf:
        raise BadInput("the time budget must be positive")
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    noise_notes = baseline_noise_notes(ledger, session, baseline, delta)  # before the round
    executor = ProcessExecutor(ledger, session, monitor)
    executor.batch = True
    rnd = open_round(
        ledger,
        session,
        m.Round(
            id=round_id or m.new_id(),
            session_id=session.id,
            baseline_id=baseline.id,
            variant_ids=[v.id for v in chosen],
            seed=seed,
            min_blocks=min_blocks,
            max_blocks=max_blocks,
            threshold=delta,
            budget_s=budget_s,
        ),
    )
    try:
        plan = Plan(
            session, rnd, baseline, chosen, {}, seed, delta, min_blocks, max_blocks, budget_s
        )
        loop = RoundLoop(
            ledger,
            executor,
            plan,
            progress=progress,
            stopped=lambda: stop is not None and stop.is_set(),
        )
    except BaseException as exc:  # open, so never left "running"
        rnd.status, rnd.ended_at, rnd.error = m.RoundStatus.FAILED, m.utcnow(), one_line(exc)
        put_closing(ledger, rnd)
        executor.close()
        raise
    loop.notes.extend(noise_notes)
    hooks = contract.hooks
    label = plan.label
    try:
        cleanup_stale_worktrees(session.repo)
        with Worktrees(session.repo) as wts:
            for arm in plan.arms:
                commit = (
                    baseline.snapshot.commit
                    if arm == BASELINE_ARM
                    else next(v for v in chosen if v.id == arm).snapshot.commit
                )
                plan.trees[arm] = wts.add(label[arm], commit) / subdir(session)
            executor.reference_tree = plan.trees[BASELINE_ARM]
            loop.notes.extend(torch_inputs.round_notes(session, baseline.snapshot.commit, chosen))
            try:
                _setup(executor, plan, progress)
                loop.checks = _checks(ledger, session, executor, chosen, plan.trees, progress)
                if contract.check and not all(loop.checks.values()):
                    loop.notes.extend(
                        _baseline_check_command(
                            session, plan.trees[BASELINE_ARM], progress, executor.env(None)
                        )
                    )
                rnd.summary["shell"], shell_words = executor.shell_facts(plan.trees[BASELINE_ARM])
                loop.notes.extend(shell_words)
                with gc_control.frozen_heap():  # full collections walk the round's own
                    loop.warm_up()
                    loop.blocks()
            finally:
                if hooks.cleanup:
                    for arm in plan.arms:
                        say(progress, Progress("cleanup", f"cleanup in {label[arm]}"))
                        executor.hook(
                            m.HookKind.CLEANUP,
                            hooks.cleanup,
                            plan.trees[arm],
                            round_id=rnd.id,
                            variant_id=_vid(arm),
                        )
    except BaseException as exc:
        _close_failed(ledger, rnd, loop, executor, exc)
        if isinstance(exc, GitError):
            raise ConductError(str(exc)) from None
        raise
    finally:
        executor.close()
    if needs_torch(session):
        note = torch_checks.remove_saved_outputs(ledger, session, chosen, keep=keep_outputs)
        loop.notes.extend([note] if note else [])
    try:
        return _finish(ledger, session, rnd, loop, executor, stop, progress)
    except BaseException as exc:  # never left "running": closed as failed, with why
        _close_failed(ledger, rnd, loop, executor, exc)
        raise


def _close_failed(
    ledger: LedgerLike, rnd: m.Round, loop: RoundLoop, executor: Executor, exc: BaseException
) -> None:
    """Close a round that an exception ended: interrupted or failed, with the reason, and
    whatever it measured kept. Each closing step is tried on its own, so the round is
    stored closed even when one of them is what fails."""
    interrupted = isinstance(exc, KeyboardInterrupt)
    for step in (
        lambda: with_room(ledger, executor.flush),  # what was measured is kept
        lambda: _store_fresh(ledger, loop) if loop.stale else None,
        (lambda: _check_baseline(ledger, loop)) if interrupted else (lambda: None),
        lambda: _close_notes(loop, executor),
    ):
        try:
            step()
        except Exception:
            pass
    rnd.status = m.RoundStatus.INTERRUPTED if interrupted else m.RoundStatus.FAILED
    rnd.ended_at = m.utcnow()
    if not interrupted:
        rnd.error = one_line(exc)
    try:
        rnd.summary = _summary(
            loop,
            "interrupted" if interrupted else loop.stop_why,
            error="" if interrupted else one_line(exc),
        )
    except Exception:
        rnd.summary = {"stop_reason": "error", "error": one_line(exc)}
    if interrupted:  # its verdicts stand when it ran its minimum: so do their flags
        try:
            runs = ledger.list(m.Run, round_id=rnd.id)
            _flag_modes(rnd, runs, loop.plan.label, rnd.summary.setdefault("notes", []))
        except Exception:
            pass  # closed without its flags rather than not closed
    put_closing(ledger, rnd)


def _finish(
    ledger: LedgerLike,
    session: m.Session,
    rnd: m.Round,
    loop: RoundLoop,
    executor: Executor,
    stop: threading.Event | None,
    progress: ProgressFn,
) -> m.Round:
    """The round's closing figures, once its blocks are over and its worktrees removed."""
    label, max_blocks = loop.plan.label, loop.plan.max_blocks
    stop_why = loop.stop_why
    if stop_why is not None and stop_why != "decided":
        loop.update(final=True)  # the limit is reached: no more blocks will come
        with ledger.write():
            ledger.put(*loop.comparisons.values())
    elif loop.stale:  # stopped between two commits: its last blocks' comparisons too
        _store_fresh(ledger, loop)
    _check_baseline(ledger, loop)
    _close_notes(loop, executor)
    _timing_facts(ledger, session, rnd, label, loop.notes)
    stopped = stop is not None and stop.is_set()
    rnd.status = (
        m.RoundStatus.INTERRUPTED if stopped and stop_why is None else m.RoundStatus.COMPLETED
    )
    if rnd.status is m.RoundStatus.INTERRUPTED:
        stop_why = "interrupted"
    rnd.ended_at = m.utcnow()
    rnd.summary = _summary(loop, stop_why)
    ledger.put(rnd)
    say(
        progress,
        Progress(
            "done",
            f"round {rnd.number}: {rnd.status.value}",
            block=rnd.blocks,
            max_blocks=max_blocks,
            runs_done=loop.runs_done,
            comparisons=list(loop.comparisons.values()),
            # the one verdict rule to the last report: a failed check is BROKEN
            failed_checks=[a for a in label if loop.checks.get(label[a]) is False],
        ),
    )
    return rnd


def _vid(arm: str) -> str | None:
    return None if arm == BASELINE_ARM else arm


def _setup(executor: Executor, plan: Plan, progress: ProgressFn) -> None:
    setup = plan.session.contract.hooks.setup
    if not setup:
        return
    for arm in plan.arms:
        say(progress, Progress("setup", f"setup in {plan.label[arm]}: {setup}"))
        rec = executor.hook(
            m.HookKind.SETUP, setup, plan.trees[arm], round_id=plan.rnd.id, variant_id=_vid(arm)
        )
        if rec.exit_code != 0:
            raise ConductError(
                f"the setup command failed in {plan.label[arm]} (exit {rec.exit_code})"
            )


def _store_fresh(ledger: LedgerLike, loop: RoundLoop) -> None:
    """The comparisons of every completed block, stored (the loop commits them only a few
    times a second)."""
    loop.update()
    loop.stale = False
    with ledger.write():
        ledger.put(*loop.comparisons.values())


def _check_baseline(ledger: LedgerLike, loop: RoundLoop) -> None:
    p = loop.plan
    mismatch = gpus.baseline_gpu_mismatch(
        [r for r in ledger.list(m.Run, baseline_id=p.baseline.id) if r.round_id is None],
        ledger.list(m.Run, round_id=p.rnd.id, arm=BASELINE_ARM),
    )
    if mismatch:  # runs of different GPUs are never compared
        loop.notes.append(mismatch)
        return
    in_round = {n: list(loop.state.values.get((BASELINE_ARM, n), {}).values()) for n in p.names}
    baseline_check(
        p.rnd,
        _reference_values(ledger, p.baseline),
        in_round,
        p.threshold,
        p.session.id,
        loop.notes,
        drifting=baseline_mod.stored_outcome(p.baseline) is baseline_mod.Outcome.DRIFTING,
    )


def _close_notes(loop: RoundLoop, executor: Executor) -> None:
    loop.notes.extend(loop.dropped_notes())
    loop.notes.extend(loop.state.failure_notes(loop.plan.label))
    loop.notes.extend(executor.notes)


def _summary(loop: RoundLoop, stop_why: str | None, error: str = "") -> dict[str, Any]:
    rnd = loop.plan.rnd
    summary = dict(rnd.summary)
    summary.update(
        {
            "seed": loop.plan.seed,
            "stop_reason": stop_why or ("error" if error else None),
            "elapsed_s": round(time.monotonic() - loop.t0, 3),
            "arms": loop.plan.label,
            "checks": loop.checks,
            "skipped_blocks": loop.skipped,
            "notes": loop.notes,
            "design": {
                "looks": list(loop.design.looks),
                "confidence": round(loop.design.confidence, 6),
                "alpha": loop.design.alpha,
                "change_confidence": round(loop.design.change_confidence, 6),
                "alpha_change": loop.design.alpha_change,
            },
        }
    )
    if error:
        summary["error"] = error
    return summary


def _timing_facts(
    ledger: LedgerLike, session: m.Session, rnd: m.Round, label: dict[str, str], notes: list[str]
) -> None:
    """What each workload's figure is, the worker options in force, and bimodal arms."""

    c = session.contract
    rnd.summary["metrics"] = {w.name: timing.metric_text(c, w) for w in c.workloads}
    runs = [
        r
        for r in ledger.list(m.Run, round_id=rnd.id)
        if r.status is m.RunStatus.OK and not r.warmup
    ]
    options: dict[str, Any] = {}
    for r in runs:
        if r.worker.get("options"):
            options[r.workload] = r.worker["options"]
    if options:
        rnd.summary["worker_options"] = options
    unsteady = sorted(
        {f"{label.get(r.arm, r.arm)}/{r.workload}" for r in runs if r.worker.get("warning")}
    )
    if unsteady:
        notes.append(
            "no steady state in warm-up for "
            + ", ".join(unsteady)
            + ": raise GPUOPT_TORCH_WARMUP_MAX or GPUOPT_TORCH_WARMUP_MAX_S"
        )
    _flag_modes(rnd, runs, label, notes)


def _flag_modes(
    rnd: m.Round, runs: Sequence[m.Run], label: dict[str, str], notes: list[str]
) -> None:
    """The arms whose runs fell into two modes, in the round's summary and notes: their
    comparisons are untrusted (session.verdicts.two_modes)."""
    flags = timing.bimodal_flags(runs, label)
    if flags:
        rnd.summary["timing_flags"] = flags
        notes.extend(f["text"] for f in flags)


def _checks(
    ledger: LedgerLike,
    session: m.Session,
    executor: Executor,
    chosen: Sequence[m.Variant],
    trees: dict[str, Path],
    progress: ProgressFn,
) -> dict[str, bool]:
    """The contract's correctness check, once per variant in its worktree; for torch
    workloads the numerical check of each variant and the audit of each arm. Each step is
    reported before it runs, as "n of m", with an ETA once one step has taken its time."""
    results: dict[str, bool] = {}
    check = session.contract.check
    names = {BASELINE_ARM: "the baseline", **{v.id: v.name for v in chosen}}
    steps: list[tuple[str, Callable[[], None]]] = []

    def command(v: m.Variant) -> None:
        assert check
        res = run_hook(
            check, trees[v.id], env=executor.env(None), timeout_s=session.contract.timeout_s
        )
        passed = res.status is not m.RunStatus.TIMEOUT and res.exit_code == 0
        ledger.put(
            m.CorrectnessResult(
                session_id=session.id,
                variant_id=v.id,
                workload="(check command)",
                passed=passed,
                exit_code=res.exit_code,
                output_tail=tail((res.stdout_tail + res.stderr_tail) or res.error),
            )
        )
        results[v.name] = passed

    def numerical(v: m.Variant) -> None:
        found = torch_checks.check_variant(ledger, session, v, trees[BASELINE_ARM], trees[v.id])
        if found:
            ledger.put(*found)
            results[v.name] = results.get(v.name, True) and all(c.passed for c in found)

    def audit(arm: str, tree: Path) -> None:
        audits = torch_checks.audit_arm(ledger, session, arm, tree)
        if audits:
            ledger.put(*audits)

    if check:
        steps += [(f"check in {v.name}: {check}", partial(command, v)) for v in chosen]
    if needs_torch(session):
        steps += [(f"numerical check of {v.name}", partial(numerical, v)) for v in chosen]
        steps += [
            (f"audit of {names.get(arm, arm)}", partial(audit, arm, tree))
            for arm, tree in trees.items()
        ]
    t0 = time.monotonic()
    for i, (what, step) in enumerate(steps):
        # the steps' mean so far for each one left: the first has none to go by
        eta = (time.monotonic() - t0) / i * (len(steps) - i) if i else None
        say(progress, Progress("check", f"{what} ({i + 1} of {len(steps)})", eta_s=eta))
        step()
    return results


def _baseline_check_command(
    session: m.Session, tree: Path, progress: ProgressFn, env: dict[str, str]
) -> list[str]:
    """After a variant failed the check: does the baseline itself pass it?

    When it does not, the failure says nothing about the variants: the check (or its
    environment) is broken. Run only then, so a passing round costs nothing more.
    """

    check = session.contract.check
    assert check
    say(progress, Progress("check", f"check in the baseline: {check}"))
    res = run_hook(check, tree, env=env, timeout_s=session.contract.timeout_s)
    if res.status is not m.RunStatus.TIMEOUT and res.exit_code == 0:
        return []
    why = "timed out" if res.status is m.RunStatus.TIMEOUT else f"exit {res.exit_code}"
    return [
        f"the correctness check fails on the baseline too ({why}): the failures above may "
        "be the check's, not the variants'; fix the check or its environment"
    ]
