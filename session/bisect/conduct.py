"""Conduct a bisection: commits, detached worktrees, builds, checks, rounds, the ledger.

Each commit is checked out in a detached worktree outside the person's tree (as a round's
arms are), built with the setup command once and checked with the check command once; a
commit that fails either, or whose runs fail, is skipped and named. The record is written
after every step, so Ctrl+C, SIGTERM or a dropped SSH connection (SIGHUP) leave it
interrupted with every finished step kept, and `resume` goes on from there. The worktrees
are removed on every way out.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

from measure.git import GitError, diff_stat
from measure.harness import workload_command
from measure.history import first_parent_history
from measure.monitor import NullMonitor, RunMonitor
from measure.runner import run_command, run_hook
from measure.worktrees import Worktrees, process_start, remove_worktree
from session import models as m
from session import timing
from session.bisect import store, words
from session.bisect.models import Bisection, Commit, Side, Spec, Status, Step
from session.bisect.search import Probe, Search, replay
from session.bisect.steps import UNTRUSTED, run_round, to_step
from session.conduct.common import (
    MIN_THRESHOLD,
    BadInput,
    ConductError,
    GateRefused,
    cleanup_stale_worktrees,
    one_line,
)
from session.ledger_port import LedgerLike

__all__ = ["plan", "resume", "spec_of_command", "spec_of_session", "start"]

Say = Callable[[str], None] | None  # a finished step's lines; live: a block's status
# Measures a step elsewhere (a Slurm job: session.cluster.bisect_jobs) instead of here.
Stepper = Callable[[Bisection, Search, Probe, Callable[[], bool], Say], Step]


def spec_of_command(
    command: str,
    metric: m.Metric | None = None,
    *,
    setup: str | None = None,
    check: str | None = None,
    prepare: str | None = None,
    timeout_s: float = 600.0,
) -> Spec:
    metric = metric or m.Metric()
    return Spec(
        workload="command",
        command=command,
        metric_source=metric.source.value,
        metric_pattern=metric.pattern,
        metric_name=metric.name,
        unit=metric.unit,
        higher=metric.direction is m.Direction.HIGHER,
        timeout_s=timeout_s,
        setup=setup,
        check=check,
        prepare=prepare,
    )


def spec_of_session(session: m.Session, workload: str | None = None) -> Spec:
    """A session's contract: one of its workloads (a torch one as one worker process per
    run, timed per call), its metric, hooks and check command."""
    c = session.contract
    names = [w.name for w in c.workloads]
    if workload is None and len(names) > 1:
        raise BadInput(f"the session has {len(names)} workloads: name one with --workload")
    chosen = next((w for w in c.workloads if workload in (None, w.name)), None)
    if chosen is None:
        raise BadInput(f"no workload {workload!r} in the session (it has {', '.join(names)})")
    command, source, pattern = chosen.command, c.metric.source.value, c.metric.pattern
    name, unit = timing.metric_label(c, chosen)
    higher = c.metric.direction is m.Direction.HIGHER
    if chosen.kind is not m.WorkloadKind.COMMAND:  # one process of the torch worker per run
        try:
            command, source, pattern = workload_command(
                chosen.kind.value, chosen.command, python=c.python, training=chosen.training
            )
        except Exception as exc:  # a malformed spec: say which workload, in one line
            raise BadInput(f"workload {chosen.name}: {one_line(exc)}") from None
        higher = False  # time per call
    return Spec(
        workload=chosen.name,
        command=command,
        metric_source=source,
        metric_pattern=pattern,
        metric_name=name,
        unit=unit or "",
        higher=higher,
        env=dict(chosen.env),
        launcher=c.launcher,
        timeout_s=c.timeout_s,
        setup=c.hooks.setup,
        check=c.check,
        prepare=c.hooks.prepare,
    )


def plan(
    repo: str | Path,
    good: str,
    bad: str,
    spec: Spec,
    *,
    threshold: float,
    min_blocks: int = 10,
    max_blocks: int = 40,
    session_id: str | None = None,
) -> Bisection:
    """A new bisection of good..bad, checked (BadInput says what is wrong) and not yet
    stored or run: `start` does both."""
    if not MIN_THRESHOLD <= threshold < 1:
        raise BadInput("the threshold must lie between 0.001 and 1 (e.g. 0.05 for 5%)")
    if min_blocks < 2 or max_blocks < min_blocks:
        raise BadInput("blocks: need 2 <= min-blocks <= max-blocks")
    where = Path(repo).expanduser().resolve()
    try:
        history = first_parent_history(where, good, bad)
    except GitError as exc:
        raise BadInput(str(exc)) from None
    rec = Bisection(
        session_id=session_id,
        repo=str(where),
        good=good,
        bad=bad,
        commits=[Commit(sha=c.sha, subject=c.subject, author=c.author) for c in history],
        spec=spec,
        threshold=threshold,
        min_blocks=min_blocks,
        max_blocks=max_blocks,
    )
    return rec


def start(
    ledger: LedgerLike,
    rec: Bisection,
    *,
    progress: Say = None,
    stop: threading.Event | None = None,
    live: Say = None,
    monitor: RunMonitor | None = None,
    stepper: Stepper | None = None,
) -> Bisection:
    """Store a planned bisection and run it until it answers or is stopped."""
    saved = store.Saved(rec, None)
    store.save(ledger, saved)
    return _go_on(ledger, saved, progress, stop, live, monitor, stepper)


def resume(
    ledger: LedgerLike,
    ref: str,
    *,
    progress: Say = None,
    stop: threading.Event | None = None,
    live: Say = None,
    monitor: RunMonitor | None = None,
    stepper: Stepper | None = None,
) -> Bisection:
    """Go on with a stopped bisection from its last finished step (the same answer as an
    uninterrupted one: the search is rebuilt from the stored steps)."""
    saved = store.load(ledger, ref)
    if saved.record.status is Status.COMPLETED:
        return saved.record
    owner = saved.record.owner
    if saved.record.status is Status.RUNNING and _alive(owner):
        raise GateRefused(
            f"bisection {saved.record.id} is running in process {owner.get('pid')}: stop it "
            "(Ctrl+C there) before resuming it here"
        )
    return _go_on(ledger, saved, progress, stop, live, monitor, stepper)


def _go_on(
    ledger: LedgerLike,
    saved: store.Saved,
    progress: Say,
    stop: threading.Event | None,
    live: Say = None,
    monitor: RunMonitor | None = None,
    stepper: Stepper | None = None,
) -> Bisection:
    rec = saved.record
    state = replay(len(rec.commits), (s for s in rec.steps))
    rec.status, rec.error = Status.RUNNING, ""
    rec.owner = {"pid": os.getpid(), "started": process_start(os.getpid()), "host": _host()}
    store.save(ledger, saved)
    stopped = (lambda: stop.is_set()) if stop is not None else (lambda: False)
    try:
        cleanup_stale_worktrees(rec.repo)
        with Worktrees(rec.repo) as wts:
            trees = _Trees(wts, rec, monitor or NullMonitor())
            while (probe := state.next_probe()) is not None and not stopped():
                if stepper is not None:
                    step = stepper(rec, state, probe, stopped, live)
                else:
                    step = _step(rec, state, probe, trees, stopped, live)
                rec.steps.append(step)
                state.record(step)
                rec.answer = state.answer().to_dict()
                store.save(ledger, saved)
                if progress is not None:
                    for line in words.step_lines(rec, step, state):
                        progress(line)
                trees.keep_only(_ends(state))
                if step.side is Side.INTERRUPTED:  # a job ended before its step did
                    break
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt)
        rec.status = Status.INTERRUPTED if interrupted else Status.FAILED
        rec.error = "" if interrupted else one_line(exc)
        try:
            _close(ledger, saved)
        except Exception:  # the first error is the one to say (a stale row stays as it was)
            pass
        if isinstance(exc, GitError):
            raise ConductError(str(exc)) from None
        raise
    rec.status = Status.INTERRUPTED if state.next_probe() is not None else Status.COMPLETED
    rec.answer = state.answer().to_dict()
    _close(ledger, saved)
    return rec


def _host() -> str:
    import socket

    return socket.gethostname()


def _alive(owner: dict[str, object]) -> bool:
    """The process that runs a bisection is still there. One on another host cannot be
    seen from here: taken as gone (if it is not, the version check of every write stops
    whichever of the two writes second, and nothing is overwritten)."""
    pid, started = owner.get("pid"), owner.get("started")
    if not isinstance(pid, int) or owner.get("host") != _host():
        return False
    now = process_start(pid)
    return now is not None and (
        not isinstance(started, (int, float)) or abs(now - float(started)) < 2.0
    )


def _close(ledger: LedgerLike, saved: store.Saved) -> None:
    saved.record.updated_at = m.utcnow()
    store.save(ledger, saved)


def _ends(state: Search) -> set[int]:
    keep = {i for iv in state.open for i in (iv.lo, iv.hi)}
    if not state.confirmed:
        keep |= {0, state.n - 1}
    return keep


def _step(
    rec: Bisection,
    state: Search,
    probe: Probe,
    trees: _Trees,
    stopped: Callable[[], bool],
    live: Say = None,
) -> Step:
    t0 = time.monotonic()
    number = len(rec.steps) + 1
    failed = {i: why for i in probe.indices if (why := trees.ready(i, stopped))}
    step = Step(number=number, kind=probe.kind, lo=probe.lo, hi=probe.hi, mid=probe.mid)
    if not failed and stopped():
        step.side = Side.INTERRUPTED
    elif not failed:
        seed = random.SystemRandom().randrange(2**31)
        result = run_round(
            probe,
            trees.sampler(),
            threshold=rec.threshold,
            min_blocks=rec.min_blocks,
            max_blocks=rec.max_blocks,
            seed=seed,
            higher=rec.spec.higher,
            stopped=stopped,
            on_block=None if live is None else lambda r: live(words.block_line(rec, r)),
        )
        step = to_step(number, result, [c.sha for c in rec.commits], seed)
        failed = dict(result.failed)
    ends = [i for i in failed if i != probe.mid]
    if ends:
        i = ends[0]
        which = "good" if i == 0 else "bad" if i == state.n - 1 else "measured"
        raise ConductError(
            f"the {which} end #{i} {rec.short(i)} {failed[i]}: the bisection cannot go on around it"
        )
    if probe.mid is not None and probe.mid in failed:
        step.side, step.reason = Side.SKIPPED, failed[probe.mid]
        trees.fail(probe.mid, step.reason)
    step.elapsed_s = round(time.monotonic() - t0, 3)
    return step


class _Trees:
    """The worktree of each commit in use, built and checked once; what failed, and why."""

    def __init__(self, wts: Worktrees, rec: Bisection, monitor: RunMonitor):
        self.wts, self.rec, self.monitor = wts, rec, monitor
        self.trees: dict[int, Path] = {}
        self.failed: dict[int, str] = {}
        self.sub = _subdir(rec.repo)

    def ready(self, i: int, stopped: Callable[[], bool]) -> str:
        """ "" when commit i is checked out, built and checked; else why not."""
        if i in self.failed or i in self.trees:
            return self.failed.get(i, "")
        if stopped():
            return ""
        spec, sha = self.rec.spec, self.rec.commits[i].sha
        try:
            tree = self.wts.add(sha[:12], sha) / self.sub
        except GitError as exc:  # e.g. a checkout filter that fails on this commit
            self.failed[i] = f"failed to check out ({one_line(exc)})"
            return self.failed[i]
        self.trees[i] = tree
        for failed_to, command in (
            ("failed to build", spec.setup),
            ("failed its correctness check", spec.check),
        ):
            if not command:
                continue
            res = run_hook(command, tree, env=spec.env or None, timeout_s=spec.timeout_s)
            if res.status is m.RunStatus.TIMEOUT or res.exit_code != 0:
                how = "timed out" if res.status is m.RunStatus.TIMEOUT else f"exit {res.exit_code}"
                self.fail(i, f"{failed_to} ({how})")
                return self.failed[i]
        return ""

    def fail(self, i: int, why: str) -> None:
        self.failed[i] = why
        self.drop(i)

    def drop(self, i: int) -> None:
        tree = self.trees.pop(i, None)
        if tree is None:
            return
        key = self.rec.commits[i].sha[:12]
        slot = self.wts.trees.pop(key, None)
        if slot is not None:
            try:
                remove_worktree(self.wts.repo, slot)
            except GitError:
                pass

    def keep_only(self, keep: set[int]) -> None:
        for i in [i for i in self.trees if i not in keep]:
            self.drop(i)

    def sampler(self) -> Callable[[int, int], tuple[float | None, str]]:
        spec = self.rec.spec

        def sample(i: int, block: int) -> tuple[float | None, str]:
            tree = self.trees[i]
            if spec.prepare:
                hook = run_hook(spec.prepare, tree, env=spec.env or None, timeout_s=spec.timeout_s)
                if hook.status is m.RunStatus.TIMEOUT or hook.exit_code != 0:
                    return None, f"the prepare command failed (exit {hook.exit_code})"
            run_id = m.new_id()
            started = False

            def on_start(pid: int) -> None:
                nonlocal started
                started = True
                self.monitor.run_started(run_id, pid)

            try:
                res = run_command(
                    spec.command,
                    tree,
                    env=spec.env or None,
                    timeout_s=spec.timeout_s,
                    launcher=spec.launcher,
                    metric_source=spec.metric_source,
                    metric_pattern=spec.metric_pattern,
                    on_start=on_start,
                )
            finally:
                if not started:
                    self.monitor.run_started(run_id, None)
                seen = self.monitor.run_finished(run_id)
            if seen.trust is m.Trust.UNTRUSTED:  # its block is run again
                return None, f"{UNTRUSTED}: {'; '.join(seen.reasons) or 'telemetry'}"
            if res.status is m.RunStatus.OK and res.value is not None:
                return res.value, ""
            return None, res.error or f"{res.status.value}, exit {res.exit_code}"

        return sample


def _subdir(repo: str) -> Path:
    from measure.git import repo_root

    here = Path(repo)
    try:
        return here.relative_to(repo_root(here).resolve())
    except ValueError:
        return Path()


def culprit_diff_stats(rec: Bisection) -> dict[int, str]:
    """`git diff --stat` of each change found (before → after), for the markdown record."""
    out: dict[int, str] = {}
    for c in (rec.answer or {}).get("changes", []):
        before, after = rec.commits[c["before"]].sha, rec.commits[c["after"]].sha
        try:
            out[c["after"]] = diff_stat(rec.repo, before, after)[0]
        except GitError as exc:
            out[c["after"]] = f"(no diff stat: {exc})"
    return out
