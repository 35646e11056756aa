"""Conducting measurements: a baseline, variants, and interleaved rounds.

What the command line, the full-screen app and the demo call. Every run happens in a
detached worktree outside the person's repository; every result lands in the ledger as
soon as it exists, so an interruption keeps what was measured.

A round: the baseline and each variant are checked out once; setup runs once per arm,
the contract's check once per variant; after one excluded warm-up run per arm and
workload, blocks follow. In each block every workload runs once per arm in a fresh random
order (the seed is recorded), each run preceded by the prepare command. A run the monitor
does not trust is quarantined and its block run again (at most three attempts). After each
block the paired estimates are updated and stored; the round stops when every comparison
is decided, or at the block limit or the time budget.
"""

from __future__ import annotations

import hashlib
import os
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from session import models as m

if TYPE_CHECKING:
    from measure.monitor import RunMonitor
    from measure.runner import RunResult
    from measure.stats import PairedEstimate

BASELINE_ARM = "baseline"
MAX_ATTEMPTS = 3
OUTPUT_TAIL = 4096
MANY_FILES = 5  # a variant touching more files than this hardly looks like one factor


@dataclass
class Progress:
    phase: str  # "snapshot" | "baseline" | "setup" | "round" | "check" | "cleanup" | "done"
    message: str
    block: int = 0
    max_blocks: int = 0
    runs_done: int = 0
    runs_total: int = 0
    eta_s: float | None = None
    comparisons: list[m.Comparison] = field(default_factory=list)


class ConductError(Exception):
    """A baseline, variant or round that cannot go on; one clear line for the person."""


class GateRefused(ConductError):
    """The method refuses the step, e.g. a round without a reproducible baseline."""


class BadInput(ConductError):
    """What was asked for cannot be: an unknown name, a missing file, a bad number."""


ProgressFn = Callable[[Progress], None] | None


def _say(progress: ProgressFn, p: Progress) -> None:
    if progress is not None:
        progress(p)


def cleanup_stale_worktrees(repo: str | Path) -> int:
    """Remove worktrees a crashed gpuopt left behind for this repository, after killing
    what it left running (in them, most likely)."""
    from measure import orphans
    from measure.git import GitError
    from measure.worktrees import cleanup_stale_worktrees as clean

    orphans.sweep_dead_owners()
    try:
        return clean(repo)
    except GitError:
        return 0


def _subdir(session: m.Session) -> Path:
    """Where in the checkout the session's repository path lies (runs start there)."""
    from measure.git import repo_root

    here = Path(session.repo).expanduser().resolve()
    try:
        return here.relative_to(repo_root(here).resolve())
    except ValueError:
        return Path()


def _snapshot_model(info: Any) -> m.Snapshot:
    return m.Snapshot(
        id=info.id,
        commit=info.commit,
        ref=info.ref,
        head=info.head,
        dirty=info.dirty,
        warnings=list(info.warnings),
    )


def _tail(text: str, limit: int = OUTPUT_TAIL) -> str:
    return text[-limit:]


# ------------------------------------------------------------------------------ runs


@dataclass
class _Command:
    command: str
    metric_source: str
    metric_pattern: str | None
    script_args: list[str] | None = None  # a torch replicate: the worker and its arguments


def _commands(session: m.Session) -> dict[str, _Command]:
    """The shell command each workload runs, with where its metric comes from."""
    contract = session.contract
    out: dict[str, _Command] = {}
    for w in contract.workloads:
        if w.kind is m.WorkloadKind.COMMAND:
            out[w.name] = _Command(w.command, contract.metric.source.value, contract.metric.pattern)
        else:
            from measure.harness import worker_script_args, workload_command

            try:
                cmd, source, pattern = workload_command(
                    w.kind.value, w.command, python=contract.python, training=w.training
                )
                args = worker_script_args("time", w.kind.value, w.command, w.training)
            except Exception as exc:  # a malformed spec: say which workload, in one line
                raise BadInput(f"workload {w.name}: {_one_line(exc)}") from None
            out[w.name] = _Command(cmd, source, pattern, args)
    return out


def check_workloads(session: m.Session) -> None:
    """BadInput when a workload cannot be turned into a command (e.g. a malformed spec)."""
    _commands(session)


def _needs_torch(session: m.Session) -> bool:
    return any(w.kind is not m.WorkloadKind.COMMAND for w in session.contract.workloads)


class _Executor:
    """Runs one workload of one arm in a worktree and records it (with its prepare hook)."""

    def __init__(self, ledger: Any, session: m.Session, monitor: RunMonitor | None):
        from measure.monitor import NullMonitor

        self.ledger = ledger
        self.session = session
        self.contract = session.contract
        self.monitor: RunMonitor = monitor or NullMonitor()
        self.commands = _commands(session)
        self.workloads = {w.name: w for w in self.contract.workloads}
        self._preloaded: dict[str, Any] = {}  # workload -> PreloadedPython, or None: spawn
        self.notes: list[str] = []
        self.job = m.new_id()  # marks every process of this baseline or round

    def close(self) -> None:
        """Stop the preloaded interpreters, and what the hooks left running (a setup
        hook's server lives as long as the job, not longer)."""
        from measure import orphans

        try:
            for server in self._preloaded.values():
                if server is not None:
                    server.close()
            self._preloaded.clear()
        finally:
            orphans.sweep(orphans.JOB_VAR, self.job)

    def _server(self, workload: str) -> Any:
        """The preloaded interpreter of a torch workload, or None to spawn each run."""
        if workload in self._preloaded:
            return self._preloaded[workload]
        from measure.preload import PreloadedPython, PreloadError, preload_ok

        server = None
        w = self.workloads[workload]
        env = self._env(workload)
        if w.kind is not m.WorkloadKind.COMMAND and preload_ok(
            self.contract.python, self.contract.launcher, env
        ):
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            try:
                server = PreloadedPython(self.contract.python or sys.executable, ["torch"], env=env)
            except PreloadError as exc:
                self.notes.append(
                    f"{workload}: each run imports torch anew "
                    f"(the preloaded interpreter did not start: {exc})"
                )
        self._preloaded[workload] = server
        return server

    def hook(
        self,
        kind: m.HookKind,
        command: str,
        cwd: Path,
        *,
        round_id: str | None,
        variant_id: str | None,
    ) -> m.HookRecord:
        from measure.runner import run_hook

        res = run_hook(command, cwd, env=self._env(None), timeout_s=self.contract.timeout_s)
        rec = m.HookRecord(
            session_id=self.session.id,
            round_id=round_id,
            variant_id=variant_id,
            kind=kind,
            command=command,
            exit_code=res.exit_code if res.status != "timeout" else None,
            output_tail=_tail((res.stdout_tail + res.stderr_tail) or res.error),
        )
        self.ledger.put(rec)
        return rec

    def _env(self, workload: str | None) -> dict[str, str]:
        from measure import orphans

        env = dict(os.environ)
        if workload is not None:
            env.update(self.workloads[workload].env)
        env[orphans.JOB_VAR] = self.job
        return env

    def run(self, run: m.Run, cwd: Path) -> m.Run:
        """Execute and store one run; the returned run has status, value and trust set."""
        from measure.runner import run_command

        prepare = self.contract.hooks.prepare
        if prepare:
            rec = self.hook(
                m.HookKind.PREPARE,
                prepare,
                cwd,
                round_id=run.round_id,
                variant_id=None if run.arm == BASELINE_ARM else run.arm,
            )
            if rec.exit_code != 0:
                run.status = m.RunStatus.FAILED
                run.error = f"the prepare command failed (exit {rec.exit_code})"
                run.trust_reasons = ["not run: the prepare command failed"]
                self.ledger.put(run)
                return run
        cmd = self.commands[run.workload]
        started = False

        def on_start(pid: int) -> None:
            nonlocal started
            started = True
            self.monitor.run_started(run.id, pid)

        try:
            res = self._preloaded_run(run, cwd, cmd, on_start)
            if res is None:
                res = run_command(
                    cmd.command,
                    cwd,
                    env=self._env(run.workload),
                    timeout_s=self.contract.timeout_s,
                    launcher=self.contract.launcher,
                    metric_source=cmd.metric_source,
                    metric_pattern=cmd.metric_pattern,
                    on_start=on_start,
                )
        finally:
            if not started:
                self.monitor.run_started(run.id, None)
            obs = self.monitor.run_finished(run.id)
        self._fill(run, res)
        if cmd.script_args is not None:
            _fill_worker(run)
        run.trust = _trust(obs.trust)
        run.trust_reasons = list(obs.reasons)
        run.telemetry = dict(obs.deltas)
        _record_containment(run, res.containment)
        if run.trust is m.Trust.UNTRUSTED:
            run.status = m.RunStatus.QUARANTINED
        self.ledger.put(run)
        return run

    def _preloaded_run(
        self, run: m.Run, cwd: Path, cmd: _Command, on_start: Callable[[int], None]
    ) -> RunResult | None:
        """The run forked from the workload's preloaded interpreter; None to spawn it."""
        server = self._server(run.workload)
        if server is None or cmd.script_args is None:
            return None
        from measure.preload import PreloadError

        env = self._env(run.workload)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        try:
            res: RunResult = server.run(
                cmd.script_args,
                cwd,
                env=env,
                timeout_s=self.contract.timeout_s,
                metric_source=cmd.metric_source,
                metric_pattern=cmd.metric_pattern,
                on_start=on_start,
            )
        except PreloadError as exc:
            server.close()
            self._preloaded[run.workload] = None
            # Nothing of this attempt was recorded: it runs again the ordinary way.
            self.notes.append(f"{run.workload}: the preloaded interpreter broke ({exc})")
            return None
        run.launch = m.RunLaunch.PRELOADED
        return res

    @staticmethod
    def _fill(run: m.Run, res: RunResult) -> None:
        run.status = m.RunStatus(res.status)
        run.value = res.value if res.status == "ok" else None
        run.exit_code = res.exit_code
        run.wall_s = res.wall_s
        run.user_s = res.user_s
        run.sys_s = res.sys_s
        run.peak_rss_bytes = res.peak_rss_bytes
        run.stdout_tail = res.stdout_tail
        run.stderr_tail = res.stderr_tail
        run.started_us = res.started_us
        run.ended_us = res.ended_us
        run.error = res.error
        run.minor_faults = getattr(res, "minor_faults", None)
        run.major_faults = getattr(res, "major_faults", None)


def _fill_worker(run: m.Run) -> None:
    """A torch replicate: keep the worker's report (metric, options, faults, warm-up), and
    say the workload's own exception rather than "exited with status 1"."""
    from session.timing import worker_report, worker_summary

    report = worker_report(run.stdout_tail)
    run.worker = worker_summary(report)
    if report.get("error") and run.status is not m.RunStatus.OK:
        run.error = f"the workload failed: {report['error']}"[:500]


def _record_containment(run: m.Run, how: str) -> None:
    """How the run's descendants were collected (measure.orphans)."""
    if how:
        run.containment = how


def _trust(value: str) -> m.Trust:
    try:
        return m.Trust(value)
    except ValueError:
        return m.Trust.UNKNOWN


# ------------------------------------------------------------------------------ baseline


def _fingerprint(session: m.Session) -> m.EnvironmentFingerprint:
    from measure.fingerprint import collect

    return m.EnvironmentFingerprint(**collect(python=session.contract.python))


def baseline_id(commit: str, environment: m.EnvironmentFingerprint, contract_hash: str) -> str:
    """Short stable hash of what defines a baseline: code, machine and contract."""
    text = f"{commit}\n{environment.stable_hash()}\n{contract_hash}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def reset_procedure(session: m.Session, snapshot: m.Snapshot) -> str:
    """How to return to the baseline's snapshot by hand: lines to paste, every value
    shell-quoted (session.commands)."""
    from session import commands

    return commands.reset_procedure(
        session.repo,
        snapshot.id,
        snapshot.commit,
        snapshot.ref,
        session.contract.hooks,
        commands.subdir_of(session.repo),
    )


def _reproducibility(
    values: dict[str, list[float]], failed: dict[str, list[str]], runs: int, session: m.Session
) -> tuple[m.Reproducibility, str]:
    from measure.stats import split_half_check

    contract = session.contract
    higher = contract.metric.direction is m.Direction.HIGHER
    parts: list[str] = []
    ok = True
    for w in contract.workloads:
        vals = values.get(w.name, [])
        bad = failed.get(w.name, [])
        if bad:
            ok = False
            parts.append(f"{w.name}: {len(bad)} of {runs} runs gave no value ({bad[-1]})")
            continue
        if len(vals) < 2:
            ok = False
            parts.append(f"{w.name}: too few values to judge")
            continue
        est = split_half_check(vals, threshold=contract.threshold, higher_is_better=higher)
        if est.ci_low is None and est.blocks_needed:  # no interval exists for so few runs
            parts.append(
                f"{w.name}: {len(vals)} runs are too few to compare its two halves; "
                f"record it with at least {est.n + est.blocks_needed} runs"
            )
            ok = False
            continue
        spread = _ci_text(est)
        more = (
            f"; about {est.blocks_needed} more runs would decide"
            if est.verdict == "INCONCLUSIVE" and est.blocks_needed
            else ""
        )
        parts.append(f"{w.name}: split halves {est.verdict}{spread}{more}")
        if est.verdict != "SAME":
            ok = False
    verdict = m.Reproducibility.REPRODUCIBLE if ok else m.Reproducibility.NOT_REPRODUCIBLE
    return verdict, "; ".join(parts)


def _ci_text(est: PairedEstimate) -> str:
    if est.ratio is None:
        return ""
    if est.ci_low is None or est.ci_high is None:
        return f" (ratio {est.ratio:.3f})"
    return f" (ratio {est.ratio:.3f}, 95% CI {est.ci_low:.3f}–{est.ci_high:.3f})"


def record_baseline(
    ledger: Any,
    session: m.Session,
    *,
    runs: int = 10,
    warmup: int = 1,
    progress: ProgressFn = None,
    stop: threading.Event | None = None,
    monitor: RunMonitor | None = None,
) -> m.Baseline:
    """Snapshot the repository, run every workload `runs` times and judge reproducibility."""
    from measure.git import unpin_on_failure

    if runs < 2:
        raise BadInput("a baseline needs at least 2 runs per workload")
    if warmup < 0:
        raise BadInput("warm-up runs cannot be negative")
    from session.repository import ledger_inside_problem

    inside = ledger_inside_problem(ledger.path, session.repo)
    if inside:
        raise BadInput(inside)
    # A baseline that fails leaves no snapshot ref; an interrupted one keeps its runs and
    # its ref.
    with unpin_on_failure(keep=(KeyboardInterrupt,)):
        return _record_baseline(ledger, session, runs, warmup, progress, stop, monitor)


def _record_baseline(
    ledger: Any,
    session: m.Session,
    runs: int,
    warmup: int,
    progress: ProgressFn,
    stop: threading.Event | None,
    monitor: RunMonitor | None,
) -> m.Baseline:
    from measure.git import GitError, take_snapshot
    from measure.worktrees import Worktrees

    executor = _Executor(ledger, session, monitor)
    cleanup_stale_worktrees(session.repo)
    _say(progress, Progress("snapshot", f"snapshot of {session.repo}"))
    try:
        snap = _snapshot_model(take_snapshot(session.repo))
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
    )
    ledger.put(baseline)
    names = [w.name for w in session.contract.workloads]
    values: dict[str, list[float]] = {n: [] for n in names}
    failed: dict[str, list[str]] = {n: [] for n in names}
    total = len(names) * (runs + warmup)
    done = 0
    interrupted = False
    hooks = session.contract.hooks
    try:
        with Worktrees(session.repo) as wts:
            tree = wts.add(BASELINE_ARM, snap.commit) / _subdir(session)
            if hooks.setup:
                _say(progress, Progress("setup", f"setup: {hooks.setup}"))
                rec = executor.hook(
                    m.HookKind.SETUP, hooks.setup, tree, round_id=None, variant_id=None
                )
                if rec.exit_code != 0:
                    raise ConductError(f"the setup command failed (exit {rec.exit_code})")
            schedule = [(i, n) for i in range(warmup) for n in names]
            schedule += [(warmup + i, n) for i in range(runs) for n in names]
            try:
                for i, name in schedule:
                    if stop is not None and stop.is_set():
                        interrupted = True
                        break
                    run = m.Run(
                        session_id=session.id,
                        baseline_id=bid,
                        arm=BASELINE_ARM,
                        workload=name,
                        block=i,
                        warmup=i < warmup,
                    )
                    executor.run(run, tree)
                    done += 1
                    if not run.warmup:
                        if run.status is m.RunStatus.OK and run.value is not None:
                            values[name].append(run.value)
                        elif run.status is not m.RunStatus.QUARANTINED:
                            failed[name].append(run.error or run.status.value)
                    what = "warm-up" if run.warmup else f"run {i + 1 - warmup} of {runs}"
                    _say(
                        progress,
                        Progress("baseline", f"{name}: {what}", runs_done=done, runs_total=total),
                    )
            finally:
                if hooks.cleanup:
                    _say(progress, Progress("cleanup", f"cleanup: {hooks.cleanup}"))
                    executor.hook(
                        m.HookKind.CLEANUP, hooks.cleanup, tree, round_id=None, variant_id=None
                    )
    except BaseException as exc:
        # Never left "being measured": interrupted, or failed with the reason.
        if isinstance(exc, KeyboardInterrupt):
            baseline.reproducibility_detail = f"interrupted after {done} of {total} runs"
        else:
            baseline.reproducibility_detail = (
                f"failed after {done} of {total} runs: {_one_line(exc)}"
            )
        _put_closing(ledger, baseline)
        if isinstance(exc, GitError):
            raise ConductError(str(exc)) from None
        raise
    finally:
        executor.close()
    baseline.reference = {n: statistics.median(v) for n, v in values.items() if v}
    if interrupted:
        baseline.reproducibility = m.Reproducibility.UNJUDGED
        baseline.reproducibility_detail = f"interrupted after {done} of {total} runs"
    else:
        verdict, detail = _reproducibility(values, failed, runs, session)
        baseline.reproducibility = verdict
        baseline.reproducibility_detail = "; ".join([detail, *executor.notes])
    ledger.put(baseline)
    _say(
        progress,
        Progress(
            "done",
            f"baseline {bid}: {baseline.reproducibility.value.replace('_', ' ')}",
            runs_done=done,
            runs_total=total,
        ),
    )
    return baseline


# ------------------------------------------------------------------------------ variants


def add_variant(
    ledger: Any,
    session: m.Session,
    name: str,
    *,
    ref: str | None = None,
    patch: str | Path | None = None,
    hypothesis_id: str | None = None,
    probe: bool = False,
) -> m.Variant:
    """Snapshot one variant (a git revision, or a patch on the baseline snapshot)."""
    from measure.git import (
        GitError,
        apply_patch,
        diff_stat,
        repo_root,
        require_commits,
        resolve_commit,
        snapshot_of_ref,
        take_snapshot,
    )
    from measure.worktrees import worktree

    if (ref is None) == (patch is None):
        raise BadInput("give exactly one of --ref GITREF or --patch FILE")
    try:
        m.Variant.model_validate(
            {"session_id": session.id, "name": name, "snapshot": {"commit": "0" * 40, "ref": "-"}}
        )
    except Exception as exc:
        raise BadInput(f"variant name {name!r}: {_first_error(exc)}") from None
    existing = ledger.list(m.Variant, session_id=session.id)
    if any(v.name == name for v in existing):
        raise BadInput(f"session {session.id} already has a variant named {name!r}")
    if hypothesis_id is not None:
        hyp = _hypothesis(ledger, session, hypothesis_id)
        hypothesis_id = hyp.id
    baseline = ledger.latest_baseline(session.id)
    cleanup_stale_worktrees(session.repo)
    try:
        if patch is not None:
            if baseline is None:
                raise GateRefused(
                    "record a baseline first: a patch applies to the baseline snapshot"
                )
            patch_path = Path(patch).expanduser()
            if not patch_path.is_file():
                raise BadInput(f"{patch}: no such patch file")
            with worktree(session.repo, baseline.snapshot.commit, "patch") as tree:
                try:
                    apply_patch(tree, patch_path)
                except GitError as exc:
                    raise BadInput(str(exc)) from None
                info = take_snapshot(tree, parent=baseline.snapshot.commit)
            source = f"patch {patch_path.resolve()}"
        else:
            assert ref is not None
            root = repo_root(session.repo)
            try:
                resolve_commit(root, ref)
            except GitError as exc:
                raise BadInput(str(exc)) from None
            info = snapshot_of_ref(session.repo, ref)
            source = f"ref {ref}"
        against = baseline.snapshot.commit if baseline else require_commits(session.repo)
        stat, files = diff_stat(session.repo, against, info.commit)
    except GitError as exc:
        raise ConductError(str(exc)) from None
    if baseline is None:
        stat = f"(no baseline yet: diff against HEAD)\n{stat}"
    variant = m.Variant(
        session_id=session.id,
        name=name,
        hypothesis_id=hypothesis_id,
        snapshot=_snapshot_model(info),
        kind=m.VariantKind.PROBE if probe else m.VariantKind.CHANGE,
        source=source,
        diff_stat=stat,
        files_changed=files,
    )
    ledger.put(variant)
    return variant


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        e = errors()[0]
        return str(e["msg"]).removeprefix("Value error, ")
    return str(exc)


def _hypothesis(ledger: Any, session: m.Session, ref: str) -> m.Hypothesis:
    found = [
        h
        for h in ledger.list(m.Hypothesis, session_id=session.id)
        if h.id == ref or h.id.startswith(ref)
    ]
    if not found:
        raise BadInput(f"no hypothesis {ref!r} in session {session.id}")
    exact = [h for h in found if h.id == ref]
    if exact:
        return exact[0]
    if len(found) > 1:
        raise BadInput(f"{ref!r} matches several hypotheses: give more characters")
    return found[0]


def missing_uncommitted(ledger: Any, session: m.Session, variant: m.Variant) -> list[str]:
    """Files the baseline had uncommitted (dirty or untracked) in which a --ref variant differs.

    A branch or commit does not carry the edits that sat uncommitted in the working tree
    when the baseline was snapshotted, so the comparison would measure their absence too:
    a second factor. Empty for patch variants (they start from the baseline snapshot) and
    when the baseline was clean.
    """
    from measure.git import GitError, git

    baseline = ledger.latest_baseline(session.id)
    if not variant.source.startswith("ref ") or baseline is None:
        return []
    snap = baseline.snapshot
    if not snap.dirty or snap.head is None:
        return []

    def names(a: str, b: str) -> set[str]:
        out = git(["diff", "--no-ext-diff", "--name-only", "-z", a, b, "--"], session.repo)
        return {n for n in out.stdout.decode("utf-8", "replace").split("\0") if n}

    try:
        return sorted(names(snap.head, snap.commit) & names(snap.commit, variant.snapshot.commit))
    except GitError:
        return []


def many_files(variant: m.Variant) -> bool:
    return variant.files_changed > MANY_FILES


# ------------------------------------------------------------------------------ rounds


def resolve_variants(
    ledger: Any, session: m.Session, refs: Sequence[str] | None
) -> list[m.Variant]:
    from ledger import LedgerError

    if not refs:
        found = ledger.list(m.Variant, session_id=session.id)
        if not found:
            raise GateRefused("no variants to measure: add one with `gpuopt variant add`")
        return list(found)
    out: list[m.Variant] = []
    for ref in refs:
        try:
            v = ledger.variant(session.id, ref.strip())
        except LedgerError as exc:
            raise BadInput(str(exc)) from None
        if v.id not in {x.id for x in out}:
            out.append(v)
    return out


def gate_round(ledger: Any, session: m.Session) -> m.Baseline:
    """The baseline a round compares against; GateRefused unless it is reproducible."""
    baseline = ledger.latest_baseline(session.id)
    if baseline is None:
        raise GateRefused("no baseline yet: record one with `gpuopt baseline` first")
    if baseline.reproducibility is m.Reproducibility.UNJUDGED:
        why = baseline.reproducibility_detail or "not judged"
        if why == "being measured":
            why = "its measurement never finished"
        raise GateRefused(f"baseline {baseline.id} was not judged ({why}): record it again")
    if baseline.reproducibility is not m.Reproducibility.REPRODUCIBLE:
        why = baseline.reproducibility_detail or baseline.reproducibility.value
        raise GateRefused(
            f"baseline {baseline.id} is not reproducible ({why}): repair the noise "
            "(e.g. more runs, a quieter machine, a prepare command) and record it again"
        )
    busy = live_round(ledger, session)
    if busy is not None:  # said before telemetry starts; checked again when it is recorded
        raise _busy(session, busy)
    return baseline


@dataclass
class _RoundState:
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


def run_round(
    ledger: Any,
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
) -> m.Round:
    """Measure the baseline and variants together, interleaved, until decided."""
    from measure import schedule
    from measure.git import GitError
    from measure.stats import paired_estimate, paired_log_ratios
    from measure.worktrees import Worktrees

    baseline = gate_round(ledger, session)
    chosen = resolve_variants(ledger, session, variants)
    contract = session.contract
    delta = threshold if threshold is not None else contract.threshold
    if not 0 < delta < 1:
        raise BadInput("the threshold must lie between 0 and 1 (e.g. 0.02 for 2%)")
    if min_blocks < 2 or max_blocks < min_blocks:
        raise BadInput("blocks: need 2 <= min-blocks <= max-blocks")
    if budget_s is not None and budget_s <= 0:
        raise BadInput("the time budget must be positive")
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    rng = random.Random(seed)
    higher = contract.metric.direction is m.Direction.HIGHER
    executor = _Executor(ledger, session, monitor)
    rnd = _open_round(
        ledger,
        session,
        m.Round(
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
    names = [w.name for w in contract.workloads]
    arms = [BASELINE_ARM, *(v.id for v in chosen)]
    label = {BASELINE_ARM: BASELINE_ARM, **{v.id: v.name for v in chosen}}
    state = _RoundState()
    comparisons: dict[tuple[str, str], m.Comparison] = {}
    notes: list[str] = []
    skipped_blocks: list[int] = []
    checks: dict[str, bool] = {}
    dropped: dict[tuple[str, str], str] = {}  # (variant arm, workload) -> why, in words
    # Torch workloads: an arm that cannot give a value is dropped early (FAILED/BROKEN).
    harnessed = {w.name for w in contract.workloads if w.kind is not m.WorkloadKind.COMMAND}
    t0 = time.monotonic()
    runs_per_block = len(arms) * len(names)
    runs_done = 0
    completed = 0
    stop_why: str | None = None
    hooks = contract.hooks

    def stopped() -> bool:
        return stop is not None and stop.is_set()

    try:
        cleanup_stale_worktrees(session.repo)
        with Worktrees(session.repo) as wts:
            trees: dict[str, Path] = {}
            for arm in arms:
                commit = (
                    baseline.snapshot.commit
                    if arm == BASELINE_ARM
                    else _variant(chosen, arm).snapshot.commit
                )
                trees[arm] = wts.add(label[arm], commit) / _subdir(session)
            try:
                if hooks.setup:
                    for arm in arms:
                        _say(progress, Progress("setup", f"setup in {label[arm]}: {hooks.setup}"))
                        rec = executor.hook(
                            m.HookKind.SETUP,
                            hooks.setup,
                            trees[arm],
                            round_id=rnd.id,
                            variant_id=_vid(arm),
                        )
                        if rec.exit_code != 0:
                            raise ConductError(
                                f"the setup command failed in {label[arm]} (exit {rec.exit_code})"
                            )
                checks = _checks(ledger, session, executor, chosen, trees, progress, rnd.id)
                if session.contract.check and not all(checks.values()):
                    notes.extend(
                        _baseline_check_command(
                            session, trees[BASELINE_ARM], progress, executor._env(None)
                        )
                    )
                # One excluded warm-up run per arm and workload.
                for name in names:
                    for arm in schedule.block_order(arms, rng):
                        if stopped():
                            break
                        warm = executor.run(
                            _new_run(session, rnd, baseline, arm, name, 0, 0, True), trees[arm]
                        )
                        if arm != BASELINE_ARM and warm.status in _NO_VALUE and name in harnessed:
                            dropped[(arm, name)] = "its warm-up failed"
                            state.fail_text[(arm, name)] = _failure(warm)
                overhead = time.monotonic() - t0  # once per round: not a block's cost
                block = 0
                while block < max_blocks and not stopped():
                    block += 1
                    done_block = False
                    for attempt in range(MAX_ATTEMPTS):
                        result = _run_block(
                            session,
                            rnd,
                            baseline,
                            executor,
                            names,
                            arms,
                            trees,
                            rng,
                            block,
                            attempt,
                            stopped,
                            skip=set(dropped),
                        )
                        runs_done += len(result.runs)
                        if result.interrupted:
                            break
                        if not result.untrusted:
                            for run in result.runs:
                                state.add(run, block)
                                if run.status in _NO_VALUE:
                                    state.fail_text[(run.arm, run.workload)] = _failure(run)
                            for v in chosen:
                                for name in names:
                                    if (
                                        name in harnessed
                                        and (v.id, name) not in dropped
                                        and state.never_ran(v.id, name)
                                    ):
                                        dropped[(v.id, name)] = "every run failed"
                            done_block = True
                            break
                        _discard(ledger, result.runs)
                        for run in result.runs:
                            if run.trust is m.Trust.UNTRUSTED:
                                key = (run.arm, run.workload)
                                state.untrusted[key] = state.untrusted.get(key, 0) + 1
                    if stopped() and not done_block:
                        break
                    if not done_block:
                        skipped_blocks.append(block)
                        notes.append(
                            f"block {block}: untrusted runs in {MAX_ATTEMPTS} attempts; left out"
                        )
                    else:
                        completed += 1
                    estimates, strict = _update_comparisons(
                        state,
                        chosen,
                        names,
                        rnd,
                        comparisons,
                        higher,
                        delta,
                        paired_log_ratios,
                        paired_estimate,
                    )
                    rnd.blocks = completed
                    _mark_failed(comparisons, dropped, state, checks, label)
                    with ledger.write():
                        ledger.put(rnd, *comparisons.values())
                    # A comparison whose arm failed every run waits for nothing: leave it
                    # out of the stop rule and the forecast (it stays INCONCLUSIVE).
                    keys = [(v.id, n) for v in chosen for n in names]
                    waiting = [
                        (vid, name) not in dropped
                        and not (
                            e.n == 0
                            and (state.never_ran(vid, name) or state.never_ran(BASELINE_ARM, name))
                        )
                        for e, (vid, name) in zip(estimates, keys, strict=True)
                    ]
                    live = [e for e, w in zip(estimates, waiting, strict=True) if w]
                    live_strict = [e for e, w in zip(strict, waiting, strict=True) if w]
                    elapsed = time.monotonic() - t0
                    eta = schedule.eta_s(
                        completed, max_blocks, elapsed - overhead, live, min_blocks
                    )
                    _say(
                        progress,
                        Progress(
                            "round",
                            f"block {block} of at most {max_blocks}",
                            block=block,
                            max_blocks=max_blocks,
                            runs_done=runs_done,
                            runs_total=max_blocks * runs_per_block,
                            eta_s=eta,
                            comparisons=[c.model_copy() for c in comparisons.values()],
                        ),
                    )
                    stop_why = schedule.stop_reason(
                        live_strict, completed, min_blocks, max_blocks, elapsed, budget_s, overhead
                    )
                    if stop_why == schedule.STOP_DECIDED and estimates and not live:
                        stop_why = "no values: every comparison's runs failed"
                    if stop_why is None and block >= max_blocks:
                        stop_why = "block limit reached"
                    if stop_why is not None:
                        break
            finally:
                if hooks.cleanup:
                    for arm in arms:
                        _say(progress, Progress("cleanup", f"cleanup in {label[arm]}"))
                        executor.hook(
                            m.HookKind.CLEANUP,
                            hooks.cleanup,
                            trees[arm],
                            round_id=rnd.id,
                            variant_id=_vid(arm),
                        )
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt)
        rnd.status = m.RoundStatus.INTERRUPTED if interrupted else m.RoundStatus.FAILED
        rnd.ended_at = m.utcnow()
        if interrupted:
            _baseline_check(rnd, baseline, state, names, delta, notes)
        notes.extend(_dropped_notes(dropped, state, label))
        notes.extend(state.failure_notes(label))
        notes.extend(executor.notes)
        rnd.summary = _summary(
            rnd,
            seed,
            "interrupted" if interrupted else stop_why,
            notes,
            skipped_blocks,
            checks,
            label,
            time.monotonic() - t0,
            error="" if interrupted else _one_line(exc),
        )
        if not interrupted:
            rnd.error = _one_line(exc)
        _put_closing(ledger, rnd)
        if isinstance(exc, GitError):
            raise ConductError(str(exc)) from None
        raise
    finally:
        executor.close()
    _baseline_check(rnd, baseline, state, names, delta, notes)
    notes.extend(_dropped_notes(dropped, state, label))
    notes.extend(state.failure_notes(label))
    notes.extend(executor.notes)
    _timing_facts(ledger, session, rnd, label, notes)
    rnd.status = (
        m.RoundStatus.INTERRUPTED if stopped() and stop_why is None else m.RoundStatus.COMPLETED
    )
    if rnd.status is m.RoundStatus.INTERRUPTED:
        stop_why = "interrupted"
    rnd.ended_at = m.utcnow()
    rnd.summary = _summary(
        rnd, seed, stop_why, notes, skipped_blocks, checks, label, time.monotonic() - t0
    )
    ledger.put(rnd)
    _say(
        progress,
        Progress(
            "done",
            f"round {rnd.number}: {rnd.status.value}",
            block=rnd.blocks,
            max_blocks=max_blocks,
            runs_done=runs_done,
            comparisons=list(comparisons.values()),
        ),
    )
    return rnd


class RoundBusy(GateRefused):
    """Another live process is measuring a round of this session."""


def live_round(ledger: Any, session: m.Session) -> m.Round | None:
    """A round of the session still being measured by a live process (this host's are
    checked; another host's running round counts as live, there is no telling)."""
    import socket

    host = socket.gethostname()
    for rnd in ledger.list(m.Round, session_id=session.id, status=m.RoundStatus.RUNNING):
        if not _stale(rnd, host):
            return rnd
    return None


def _busy(session: m.Session, first: m.Round) -> RoundBusy:
    where = f"pid {first.pid} on {first.host}" if first.pid else "another process"
    return RoundBusy(
        f"round {first.number} ({first.id}) of session {session.id} is being measured "
        f"by {where}, started {first.started_at:%Y-%m-%d %H:%M:%S} UTC: "
        "wait for it to end (or stop it) before starting another"
    )


def _open_round(ledger: Any, session: m.Session, rnd: m.Round) -> m.Round:
    """Record a new round as this process's, numbered in the same write transaction.

    BEGIN IMMEDIATE makes the check and the number one step: two rounds started at once
    cannot both see no live round, nor both take the same number. Rounds left "running"
    by a process of this host that is gone are closed first (stale, not live).
    """
    owner = _owner()
    with ledger.write():
        recover_stale_rounds(ledger, session)
        first = live_round(ledger, session)
        if first is not None:
            raise _busy(session, first)
        rounds = ledger.list(m.Round, session_id=session.id)
        rnd.number = 1 + max((r.number for r in rounds), default=0)
        rnd.pid, rnd.host = owner["pid"], owner["host"]
        rnd.summary = {**rnd.summary, "owner": owner}
        ledger.put(rnd)
    return rnd


def _owner() -> dict[str, Any]:
    """Which process conducts a round, to recognise one left running by a crash."""
    import socket

    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started": _process_start(os.getpid()),
    }


def _process_start(pid: int) -> float | None:
    try:
        import psutil

        return float(psutil.Process(pid).create_time())
    except Exception:
        return None


def _stale(rnd: m.Round, host: str) -> bool:
    """Left "running" by a process of this host that is gone (or is another by now)."""
    owner = rnd.summary.get("owner") or {}
    pid = rnd.pid if rnd.pid is not None else owner.get("pid")
    if (rnd.host or owner.get("host")) != host or not isinstance(pid, int):
        return False  # another machine's, or no owner recorded: no telling
    started = _process_start(pid)
    recorded = owner.get("started")
    alive = started is not None and (
        not isinstance(recorded, (int, float)) or abs(started - recorded) < 2.0
    )
    return not alive


def recover_stale_rounds(ledger: Any, session: m.Session) -> list[m.Round]:
    """Mark rounds left "running" by a process of this machine that is gone as interrupted.

    Their completed runs stay; only the status, end time and a note change.
    """
    import socket

    host = socket.gethostname()
    fixed = []
    for rnd in ledger.list(m.Round, session_id=session.id, status=m.RoundStatus.RUNNING):
        if not _stale(rnd, host):
            continue
        rnd.status = m.RoundStatus.INTERRUPTED
        rnd.ended_at = m.utcnow()
        rnd.summary = {
            **rnd.summary,
            "stop_reason": "interrupted",
            "notes": [*rnd.summary.get("notes", []), "its process ended without closing it"],
        }
        fixed.append(rnd)
    if fixed:
        ledger.put(*fixed)
    return fixed


def _put_closing(ledger: Any, item: Any) -> None:
    """Record how a baseline or round ended, while an error is on its way out. When the
    ledger itself is what failed, the error says more than a second one would; a round
    left "running" is closed as stale by the next start."""
    try:
        ledger.put(item)
    except Exception:
        pass


def _one_line(exc: BaseException) -> str:
    """An error's first line, as stored: no secret of the environment in it."""
    from measure.redact import redact

    text = str(exc).strip().splitlines()
    return redact(text[0]) if text else type(exc).__name__


def _vid(arm: str) -> str | None:
    return None if arm == BASELINE_ARM else arm


def _variant(chosen: Sequence[m.Variant], vid: str) -> m.Variant:
    return next(v for v in chosen if v.id == vid)


def _new_run(
    session: m.Session,
    rnd: m.Round,
    baseline: m.Baseline,
    arm: str,
    workload: str,
    block: int,
    attempt: int,
    warmup: bool,
) -> m.Run:
    return m.Run(
        session_id=session.id,
        round_id=rnd.id,
        baseline_id=baseline.id,
        arm=arm,
        workload=workload,
        block=block,
        attempt=attempt,
        warmup=warmup,
    )


@dataclass
class _Block:
    runs: list[m.Run]
    untrusted: bool = False
    interrupted: bool = False


def _run_block(
    session: m.Session,
    rnd: m.Round,
    baseline: m.Baseline,
    executor: _Executor,
    names: list[str],
    arms: list[str],
    trees: dict[str, Path],
    rng: random.Random,
    block: int,
    attempt: int,
    stopped: Callable[[], bool],
    skip: set[tuple[str, str]] | None = None,
) -> _Block:
    from measure import schedule

    out = _Block(runs=[])
    for name in names:
        for arm in schedule.block_order(arms, rng):
            if skip and (arm, name) in skip:
                continue  # a FAILED arm: dropped from the later blocks (said in the notes)
            if stopped():
                out.interrupted = True
                return out
            run = executor.run(
                _new_run(session, rnd, baseline, arm, name, block, attempt, False), trees[arm]
            )
            out.runs.append(run)
            if run.trust is m.Trust.UNTRUSTED:
                out.untrusted = True
                return out  # the block is run again: no point finishing this attempt
    return out


def _discard(ledger: Any, runs: list[m.Run]) -> None:
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


def _update_comparisons(
    state: _RoundState,
    chosen: Sequence[m.Variant],
    names: list[str],
    rnd: m.Round,
    comparisons: dict[tuple[str, str], m.Comparison],
    higher: bool,
    delta: float,
    paired_log_ratios: Any,
    paired_estimate: Any,
) -> tuple[list[PairedEstimate], list[PairedEstimate]]:
    """Update the round's comparisons (95% intervals); also return the estimates at the
    stricter confidence that may end a round early (measure.schedule.EARLY_STOP_CONFIDENCE)."""
    from measure import schedule

    estimates = []
    strict = []
    for v in chosen:
        for name in names:
            base = state.values.get((BASELINE_ARM, name), {})
            var = state.values.get((v.id, name), {})
            blocks = sorted(set(base) & set(var))
            d = paired_log_ratios([base[b] for b in blocks], [var[b] for b in blocks], higher)
            est = paired_estimate(d, threshold=delta)
            estimates.append(est)
            strict.append(
                paired_estimate(d, threshold=delta, confidence=schedule.EARLY_STOP_CONFIDENCE)
            )
            c = comparisons.get((v.id, name)) or m.Comparison(
                round_id=rnd.id, variant_id=v.id, workload=name, n=0
            )
            c.n = est.n
            c.ratio, c.ci_low, c.ci_high = est.ratio, est.ci_low, est.ci_high
            c.verdict = m.Verdict(est.verdict)
            c.blocks_needed = est.blocks_needed
            c.untrusted_runs = state.untrusted.get((v.id, name), 0)
            c.failed_runs = state.failed.get((v.id, name), 0)
            comparisons[(v.id, name)] = c
    return estimates, strict


_NO_VALUE = (m.RunStatus.FAILED, m.RunStatus.TIMEOUT, m.RunStatus.NO_METRIC)


def _failure(run: m.Run) -> str:
    from session.timing import failure_text

    return failure_text(run)


def _mark_failed(
    comparisons: dict[tuple[str, str], m.Comparison],
    dropped: dict[tuple[str, str], str],
    state: _RoundState,
    checks: dict[str, bool],
    label: dict[str, str],
) -> None:
    """A dropped arm's comparison is FAILED (BROKEN when its check failed too), with the
    last lines of its exception."""
    for key, why in dropped.items():
        c = comparisons.get(key)
        if c is None:
            continue
        broken = checks.get(label.get(key[0], key[0])) is False
        c.verdict = m.Verdict.BROKEN if broken else m.Verdict.FAILED
        c.error = state.fail_text.get(key, "")[-4000:]
        c.note = f"{why}: dropped from later blocks of the round"
        c.blocks_needed = None


def _dropped_notes(
    dropped: dict[tuple[str, str], str], state: _RoundState, label: dict[str, str]
) -> list[str]:
    notes = []
    for (arm, name), why in dropped.items():
        text = state.fail_text.get((arm, name), "").strip().splitlines()
        last = f" (last: {text[-1].strip()[:300]})" if text else ""
        notes.append(
            f"{label.get(arm, arm)}/{name}: FAILED, {why}{last}; dropped from later blocks"
        )
    return notes


def _timing_facts(
    ledger: Any, session: m.Session, rnd: m.Round, label: dict[str, str], notes: list[str]
) -> None:
    """What each workload's figure is, the worker options in force, and bimodal arms."""
    from session import timing

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
    flags = timing.bimodal_flags(runs, label)
    if flags:
        rnd.summary["timing_flags"] = flags
        notes.extend(f["text"] for f in flags)


def _baseline_check(
    rnd: m.Round,
    baseline: m.Baseline,
    state: _RoundState,
    names: list[str],
    delta: float,
    notes: list[str],
) -> None:
    ratios: dict[str, float] = {}
    for name in names:
        vals = list(state.values.get((BASELINE_ARM, name), {}).values())
        ref = baseline.reference.get(name)
        if vals and ref:
            ratios[name] = statistics.median(vals) / ref
    if not ratios:
        rnd.baseline_check, rnd.baseline_reproduced = None, None
        return
    worst = max(ratios, key=lambda n: abs(ratios[n] - 1.0))
    rnd.baseline_check = ratios[worst]
    rnd.baseline_reproduced = all(abs(r - 1.0) <= delta for r in ratios.values())
    rnd.summary["baseline_check"] = ratios
    if not rnd.baseline_reproduced:
        notes.append(
            f"baseline not reproduced: {worst} ran at {ratios[worst]:.3f}× its reference "
            f"(beyond ±{delta:.0%}); the verdicts of this round are not trusted"
        )


def _checks(
    ledger: Any,
    session: m.Session,
    executor: _Executor,
    chosen: Sequence[m.Variant],
    trees: dict[str, Path],
    progress: ProgressFn,
    round_id: str,
) -> dict[str, bool]:
    """The contract's correctness check, once per variant in its worktree."""
    results: dict[str, bool] = {}
    check = session.contract.check
    if check:
        from measure.runner import run_hook

        for v in chosen:
            _say(progress, Progress("check", f"check in {v.name}: {check}"))
            res = run_hook(
                check, trees[v.id], env=executor._env(None), timeout_s=session.contract.timeout_s
            )
            passed = res.status != "timeout" and res.exit_code == 0
            ledger.put(
                m.CorrectnessResult(
                    session_id=session.id,
                    variant_id=v.id,
                    workload="(check command)",
                    passed=passed,
                    exit_code=res.exit_code,
                    output_tail=_tail((res.stdout_tail + res.stderr_tail) or res.error),
                )
            )
            results[v.name] = passed
    if _needs_torch(session):
        import importlib

        torch_checks = importlib.import_module("session.torch_checks")

        for v in chosen:
            _say(progress, Progress("check", f"numerical check of {v.name}"))
            found = torch_checks.check_variant(ledger, session, v, trees[BASELINE_ARM], trees[v.id])
            if found:
                ledger.put(*found)
                results[v.name] = results.get(v.name, True) and all(c.passed for c in found)
        for arm, tree in trees.items():
            audits = torch_checks.audit_arm(ledger, session, arm, tree)
            if audits:
                ledger.put(*audits)
    return results


def _baseline_check_command(
    session: m.Session, tree: Path, progress: ProgressFn, env: dict[str, str]
) -> list[str]:
    """After a variant failed the check: does the baseline itself pass it?

    When it does not, the failure says nothing about the variants: the check (or its
    environment) is broken. Run only then, so a passing round costs nothing more.
    """
    from measure.runner import run_hook

    check = session.contract.check
    assert check
    _say(progress, Progress("check", f"check in the baseline: {check}"))
    res = run_hook(check, tree, env=env, timeout_s=session.contract.timeout_s)
    if res.status != "timeout" and res.exit_code == 0:
        return []
    why = "timed out" if res.status == "timeout" else f"exit {res.exit_code}"
    return [
        f"the correctness check fails on the baseline too ({why}): the failures above may "
        "be the check's, not the variants'; fix the check or its environment"
    ]


def _summary(
    rnd: m.Round,
    seed: int,
    stop_why: str | None,
    notes: list[str],
    skipped: list[int],
    checks: dict[str, bool],
    label: dict[str, str],
    elapsed: float,
    error: str = "",
) -> dict[str, Any]:
    summary = dict(rnd.summary)
    summary.update(
        {
            "seed": seed,
            "stop_reason": stop_why or ("error" if error else None),
            "elapsed_s": round(elapsed, 3),
            "arms": label,
            "checks": checks,
            "skipped_blocks": skipped,
            "notes": notes,
        }
    )
    if error:
        summary["error"] = error
    return summary
