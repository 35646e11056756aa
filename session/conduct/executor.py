"""Who runs a workload: the executor interface, and the one that starts real processes.

The baseline and the round loops ask an `Executor` for one run at a time; the process
executor runs it in a worktree with its prepare hook and telemetry and stores it. A test
can give the loops a scripted executor instead (no processes, values chosen per run).

With `batch` on, a run (and its prepare hook's record) is held until `flush()`, which the
loops call once per block: one SQLite commit per block instead of two per run, and a crash
loses at most the block in progress.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from measure import orphans
from measure.harness import REFERENCE_ROOT_ENV, worker_script_args, workload_command
from measure.monitor import NullMonitor
from measure.preload import PreloadedPython, PreloadError, preload_ok
from measure.runner import AUTO, direct_argv, run_command, run_hook, shell_cost_s
from session import gpus
from session import models as m
from session.conduct.common import BASELINE_ARM, BadInput, one_line, tail
from session.ledger_port import LedgerLike
from session.timing import shim_warning, worker_report, worker_summary

if TYPE_CHECKING:
    from measure.monitor import RunMonitor
    from measure.runner import RunResult

__all__ = ["Executor", "ProcessExecutor", "check_workloads", "needs_torch", "shim_warnings"]


class Executor(Protocol):
    """Runs one workload of one arm and stores it; the returned run has its status, value
    and trust set. `notes` collects what the person should read at the end."""

    notes: list[str]

    def run(self, run: m.Run, cwd: Path) -> m.Run: ...

    def hook(
        self,
        kind: m.HookKind,
        command: str,
        cwd: Path,
        *,
        round_id: str | None,
        variant_id: str | None,
    ) -> m.HookRecord: ...

    def env(self, workload: str | None) -> dict[str, str]: ...

    def flush(self, *also: BaseModel) -> None:
        """Store the runs held back (with `also`) in one transaction."""
        ...

    def close(self) -> None: ...


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
            try:
                cmd, source, pattern = workload_command(
                    w.kind.value, w.command, python=contract.python, training=w.training
                )
                args = worker_script_args("time", w.kind.value, w.command, w.training)
            except Exception as exc:  # a malformed spec: say which workload, in one line
                raise BadInput(f"workload {w.name}: {one_line(exc)}") from None
            out[w.name] = _Command(cmd, source, pattern, args)
    return out


def check_workloads(session: m.Session) -> None:
    """BadInput when a workload cannot be turned into a command (e.g. a malformed spec)."""
    _commands(session)


def shim_warnings(session: m.Session) -> list[str]:
    """A warning for each command workload that starts through a version manager's shim."""

    out = []
    for w in session.contract.workloads:
        if w.kind is m.WorkloadKind.COMMAND:
            found = shim_warning(w.name, w.command, w.env.get("PATH"))
            if found:
                out.append(found)
    return out


def needs_torch(session: m.Session) -> bool:
    return any(w.kind is not m.WorkloadKind.COMMAND for w in session.contract.workloads)


# What a round says when every workload runs without a shell.
SHELL_NONE = "every workload runs directly, without a shell (plain words, as hyperfine -N)"


class ProcessExecutor:
    """Runs one workload of one arm in a worktree and records it (with its prepare hook)."""

    def __init__(self, ledger: LedgerLike, session: m.Session, monitor: RunMonitor | None):
        self.ledger = ledger
        self.session = session
        self.contract = session.contract
        self.monitor: RunMonitor = monitor or NullMonitor()
        self.commands = _commands(session)
        self.workloads = {w.name: w for w in self.contract.workloads}
        self._preloaded: dict[str, Any] = {}  # workload -> PreloadedPython, or None: spawn
        self.notes: list[str] = []
        self.job = m.new_id()  # marks every process of this baseline or round
        # The baseline's checkout in a round: a variant's timed KernelBench calls take their
        # inputs from its file and re-check a sample of calls against its model.
        self.reference_tree: Path | None = None
        self.batch = False  # hold runs until flush(): one commit per block
        # Each run's environment, made once per workload and side: copying os.environ
        # was a tenth of what a round added to a run of `true`.
        self._envs: dict[tuple[str, bool], dict[str, str]] = {}
        self._held: list[BaseModel] = []
        self.notes.extend(shim_warnings(session))

    def _store(self, item: BaseModel) -> None:
        if self.batch:
            self._held.append(item)
        else:
            self.ledger.put(item)

    def flush(self, *also: BaseModel) -> None:
        held, self._held = self._held, []
        if held or also:
            self.ledger.put(*held, *also)

    def close(self) -> None:
        """Stop the preloaded interpreters, and what the hooks left running (a setup
        hook's server lives as long as the job, not longer)."""

        try:
            self.flush()
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

        server = None
        w = self.workloads[workload]
        env = self.env(workload)
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
        res = run_hook(command, cwd, env=self.env(None), timeout_s=self.contract.timeout_s)
        rec = m.HookRecord(
            session_id=self.session.id,
            round_id=round_id,
            variant_id=variant_id,
            kind=kind,
            command=command,
            exit_code=res.exit_code if res.status is not m.RunStatus.TIMEOUT else None,
            output_tail=tail((res.stdout_tail + res.stderr_tail) or res.error),
        )
        if kind is m.HookKind.PREPARE:
            self._store(rec)  # with its run
        else:
            self.ledger.put(rec)
        return rec

    def env(self, workload: str | None) -> dict[str, str]:
        env = dict(os.environ)
        if workload is not None:
            env.update(self.workloads[workload].env)
        env[orphans.JOB_VAR] = self.job
        if self.contract.gpu:  # the contract's GPU, and it alone (telemetry follows it)
            env[gpus.VISIBLE] = self.contract.gpu
        return env

    def _run_env(self, run: m.Run) -> dict[str, str]:
        """The run's environment (a copy: the caller may add to it)."""
        key = (run.workload, self.reference_tree is not None and run.arm != BASELINE_ARM)
        env = self._envs.get(key)
        if env is None:
            env = self.env(run.workload)
            if key[1]:
                env[REFERENCE_ROOT_ENV] = str(self.reference_tree)
            self._envs[key] = env
        return dict(env)

    def run(self, run: m.Run, cwd: Path) -> m.Run:
        """Execute and store one run; the returned run has status, value and trust set."""

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
                self._store(run)
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
                    env=self._run_env(run),
                    timeout_s=self.contract.timeout_s,
                    launcher=self.contract.launcher,
                    metric_source=cmd.metric_source,
                    metric_pattern=cmd.metric_pattern,
                    on_start=on_start,
                    shell=AUTO,  # plain words run directly: no shell start-up in the figure
                    env_is_whole=True,  # env(): os.environ with the workload's own
                )
        finally:
            if not started:
                self.monitor.run_started(run.id, None)
            obs = self.monitor.run_finished(run.id)
        values = _result_values(res)
        if cmd.script_args is not None:
            values.update(_worker_values(res.stdout_tail, values["status"]))
        trust = _trust(obs.trust)
        values.update(trust=trust, trust_reasons=list(obs.reasons), telemetry=dict(obs.deltas))
        if self.contract.gpu and not run.place:
            values["place"] = gpus.gpu_place(self.contract.gpu, values["telemetry"])
        if res.containment:  # how the run's descendants were collected (measure.orphans)
            values["containment"] = res.containment
        if trust is m.Trust.UNTRUSTED:
            values["status"] = m.RunStatus.QUARANTINED
        _assign(run, values)
        self._store(run)
        return run

    def shell_facts(self, cwd: Path) -> tuple[dict[str, Any], list[str]]:
        """How each workload's runs start, and what a shell costs them, in values and in
        words: plain words run directly (no shell, as hyperfine -N); anything else through
        bash, whose start-up (measured here, `bash -c ''` ten times) is in every figure,
        not subtracted (a ratio of two such figures holds it on both sides)."""
        facts: dict[str, Any] = {}
        via: list[str] = []
        plain: list[str] = []
        for name, cmd in self.commands.items():
            env = self.env(name)
            direct = direct_argv(cmd.command, cwd, env.get("PATH"), self.contract.launcher)
            facts[name] = {"shell": None if direct is not None else "bash"}
            if direct is None and cmd.script_args is None:  # a torch worker: no shell
                via.append(name)
            else:
                plain.append(name)
        if not via:
            return facts, [SHELL_NONE]
        cost = shell_cost_s("bash", cwd=cwd)
        for name in via:
            facts[name]["shell_cost_s"] = cost
        said = "unknown" if cost is None else f"{cost * 1e3:.1f} ms"
        words = [
            f"{', '.join(via)}: run through bash (its command has shell syntax); the shell's "
            f"start-up, measured at {said} per run, is included in every figure, not "
            "subtracted"
        ]
        if plain:  # a mixed contract: each workload's figure says which way it ran
            words.append(
                f"{', '.join(plain)}: run directly, without a shell (plain words, as hyperfine -N)"
            )
        return facts, words

    def _preloaded_run(
        self, run: m.Run, cwd: Path, cmd: _Command, on_start: Callable[[int], None]
    ) -> RunResult | None:
        """The run forked from the workload's preloaded interpreter; None to spawn it."""
        server = self._server(run.workload)
        if server is None or cmd.script_args is None:
            return None

        env = self._run_env(run)
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


def _assign(run: m.Run, values: dict[str, Any]) -> None:
    """Set the run's fields with one validation of the whole row: validated one by one
    (validate_assignment), ~20 fields cost ~0.1 ms of each run, of a short command most of
    what recording it adds."""
    fresh = type(run).model_validate({**run.__dict__, **values})
    run.__dict__.update(fresh.__dict__)
    run.__pydantic_fields_set__.update(values)


def _result_values(res: RunResult) -> dict[str, Any]:
    status = m.RunStatus(res.status)
    return {
        "status": status,
        "value": res.value if status is m.RunStatus.OK else None,
        "exit_code": res.exit_code,
        "wall_s": res.wall_s,
        "user_s": res.user_s,
        "sys_s": res.sys_s,
        "peak_rss_bytes": res.peak_rss_bytes,
        "stdout_tail": res.stdout_tail,
        "stderr_tail": res.stderr_tail,
        "started_us": res.started_us,
        "ended_us": res.ended_us,
        "error": res.error,
        "minor_faults": res.minor_faults,
        "major_faults": res.major_faults,
    }


def _worker_values(stdout_tail: str, status: m.RunStatus) -> dict[str, Any]:
    """A torch replicate: keep the worker's report (metric, options, faults, warm-up), and
    say the workload's own exception rather than "exited with status 1"."""

    report = worker_report(stdout_tail)
    out: dict[str, Any] = {"worker": worker_summary(report)}
    if report.get("error") and status is not m.RunStatus.OK:
        out["error"] = f"the workload failed: {report['error']}"[:500]
    return out


def _trust(value: str) -> m.Trust:
    try:
        return m.Trust(value)
    except ValueError:
        return m.Trust.UNKNOWN
