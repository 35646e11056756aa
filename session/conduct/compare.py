"""`gpuopt compare`: commands measured against each other with no session, as a hyperfine
user expects, but interleaved and paired, with the round's stopping rule.

Each block runs every command once, in a fresh random order, each run after the prepare
command; one excluded warm-up run per command (or `warmup`) comes first. The first command
is the reference: for every other one the per-block d = ln(other / reference) gives the
Hodges–Lehmann ratio, its signed-rank interval at the sequential design's confidence (the
interval that decides, so the one shown), and the design's verdict (measure.sequential),
read at its looks only. Nothing is stored unless `store` is called
(`gpuopt compare --ledger`): then the comparison becomes a session of its own.
"""

from __future__ import annotations

import csv
import io
import random
import shlex
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure import gc_control, schedule, sequential
from measure.runner import run_command, run_hook, shell_cost_s
from measure.stats import paired_log_ratios
from measure.vocabulary import RunStatus, Verdict
from session.conduct.undecided import undecided_words
from session.errors import BadInput, ConductError
from session.format import ci_text, ratio_text
from session.verdicts import change_words

__all__ = [
    "CommandStats",
    "CompareResult",
    "Relation",
    "compare",
    "hyperfine_markdown",
    "samples_csv",
]


@dataclass
class CommandStats:
    """One command's runs, in seconds, as hyperfine reports them."""

    command: str
    times: list[float] = field(default_factory=list)
    user: list[float] = field(default_factory=list)
    system: list[float] = field(default_factory=list)
    exit_codes: list[int | None] = field(default_factory=list)
    # Peak RSS per timed run (wait4's ru_maxrss), bytes: only those above gpuopt's own
    # peak, which Linux counts in a child's (measure.runner), so it says nothing then.
    memory: list[int] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return len(self.times)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def stddev(self) -> float | None:
        return statistics.stdev(self.times) if len(self.times) > 1 else None

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    def hyperfine(self) -> dict[str, Any]:
        """This command in hyperfine's --export-json schema."""
        return {
            "command": self.command,
            "mean": self.mean,
            "stddev": self.stddev,
            "median": self.median,
            "user": statistics.fmean(self.user) if self.user else None,
            "system": statistics.fmean(self.system) if self.system else None,
            "min": min(self.times),
            "max": max(self.times),
            "times": list(self.times),
            "exit_codes": list(self.exit_codes),
            "parameters": {},
            # hyperfine 1.20's peak RSS per run, when every timed run has a known one
            **(
                {"memory_usage_byte": list(self.memory)}
                if self.memory and len(self.memory) == len(self.times)
                else {}
            ),
        }


@dataclass
class Relation:
    """A command against the reference: ratio = its time / the reference's (paired)."""

    command: str
    n: int
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: Verdict
    note: str = ""
    confidence: float = 0.95  # of ci_low..ci_high: the design's, the interval that decided
    threshold: float | None = None

    def words(self, reference: str) -> str:
        """ "B ran 1.42 ± 0.03 × faster than A (99.8% CI …): FASTER" in hyperfine's manner."""
        if self.ratio is None:
            return f"{self.command}: no paired values ({self.note or 'every run failed'})"
        faster = self.ratio < 1
        factor = 1 / self.ratio if faster else self.ratio
        if self.ci_low is not None and self.ci_high is not None:
            lo, hi = sorted(
                (1 / self.ci_high, 1 / self.ci_low) if faster else (self.ci_low, self.ci_high)
            )
            spread = f" ± {(hi - lo) / 2:.2f}"
            ci = f" ({ci_text(lo, hi, self.confidence)})"
        else:
            spread, ci = "", ""
        way = "faster" if faster else "slower"
        text = f"{self.command} ran {factor:.2f}{spread} × {way} than {reference}{ci}: "
        text += str(self.verdict)
        said = change_words(self.verdict, self.ratio, self.threshold)
        if said:
            text += f" {said}"
        return f"{text}; {self.note}" if self.note else text


@dataclass
class CompareResult:
    commands: list[CommandStats]
    relations: list[Relation]
    blocks: int
    stop_reason: str
    threshold: float
    design: sequential.Design
    seed: int
    # Every timed run as (command index, block, measure.runner.RunResult), for `store`.
    records: list[tuple[int, int, Any]] = field(default_factory=list)
    cwd: str = ""
    elapsed_s: float = 0.0
    shell: str | None = None  # the commands' shell; None: run without one (-N)
    shell_cost_s: float | None = None  # its start-up per run, measured (not subtracted)

    def shell_words(self) -> str:
        """What the times hold of the shell, in words."""
        if self.shell is None:
            return "no shell: the commands ran directly (-N), as hyperfine -N"
        cost = (
            "not measured"
            if self.shell_cost_s is None
            else (f"{self.shell_cost_s * 1e3:.2f} ms per run (measured)")
        )
        return (
            f"shell {self.shell}: its start-up, {cost}, is included in every time, not "
            "subtracted (hyperfine subtracts it); -N runs plain commands without one"
        )

    def hyperfine(self) -> dict[str, Any]:
        """hyperfine's --export-json document, plus our verdicts under "gpuopt"."""
        return {
            "results": [c.hyperfine() for c in self.commands],
            "gpuopt": {
                "reference": self.commands[0].command,
                "threshold": self.threshold,
                "blocks": self.blocks,
                "stop_reason": self.stop_reason,
                "seed": self.seed,
                "looks": list(self.design.looks),
                "look_confidence": self.design.confidence,
                "change_confidence": self.design.change_confidence,
                "memory_usage_byte": "peak RSS per run from wait4, in hyperfine's field; left "
                "out of a result when a run's peak did not rise above gpuopt's own by more than "
                "the kernel's batched page count (Linux counts the parent's in the child's, so "
                "it would say nothing)",
                "shell": {
                    "shell": self.shell,
                    "cost_s": self.shell_cost_s,
                    "subtracted": False,
                },
                "comparisons": [
                    {
                        "command": r.command,
                        "n": r.n,
                        "ratio": r.ratio,
                        "ci_low": r.ci_low,
                        "ci_high": r.ci_high,
                        "ci_confidence": r.confidence,
                        "verdict": r.verdict.value,
                        "verdict_words": _words(r),
                        "note": r.note,
                    }
                    for r in self.relations
                ],
            },
        }


Runner = Callable[..., Any]  # measure.runner.run_command's shape


def compare(
    commands: Sequence[str],
    *,
    warmup: int = 1,
    min_blocks: int = 10,
    max_blocks: int = 30,
    threshold: float = 0.02,
    prepare: str | None = None,
    setup: str | None = None,
    cleanup: str | None = None,
    shell: str | None = "bash",
    cwd: Path | None = None,
    seed: int | None = None,
    budget_s: float | None = None,
    timeout_s: float = 600.0,
    progress: Callable[[int, int], None] | None = None,
    stop: threading.Event | None = None,
    run: Runner | None = None,
) -> CompareResult:
    """Measure `commands` interleaved until every one is decided against the first."""
    if len(commands) < 2:
        raise BadInput("compare needs at least two commands")
    if not 0 < threshold < 1:
        raise BadInput("the threshold must lie between 0 and 1 (e.g. 0.02 for 2%)")
    if min_blocks < 2 or max_blocks < min_blocks:
        raise BadInput("runs: need 2 <= --runs <= --max-runs")
    if warmup < 0:
        raise BadInput("warm-up runs cannot be negative")
    if shell is None:
        for c in commands:
            try:
                if not shlex.split(c):
                    raise BadInput("an empty command cannot run without a shell")
            except ValueError as exc:
                raise BadInput(f"{c!r}: {exc} (without a shell its words are split)") from None
    runner = run or run_command
    where = cwd or Path.cwd()
    seed = random.SystemRandom().randrange(2**31) if seed is None else seed
    rng = random.Random(seed)
    design = sequential.Design.plan(min_blocks, max_blocks)
    stats_of = [CommandStats(c) for c in commands]
    per_block: list[dict[int, float]] = [{} for _ in commands]
    order = list(range(len(commands)))

    def hook(command: str | None, what: str) -> None:
        if not command:
            return
        res = run_hook(command, where, timeout_s=timeout_s)
        if res.status is RunStatus.TIMEOUT or res.exit_code != 0:
            raise ConductError(f"the {what} command failed (exit {res.exit_code}): {command}")

    def once(i: int) -> Any:
        hook(prepare, "prepare")
        return runner(commands[i], where, timeout_s=timeout_s, shell=shell)

    # What the shell costs each run, measured as hyperfine does (it then subtracts it).
    shell_cost = shell_cost_s(shell, cwd=where) if shell is not None and run is None else None
    t0 = time.monotonic()
    stop_why = "interrupted"
    records: list[tuple[int, int, Any]] = []
    blocks = 0
    hook(setup, "setup")
    try:
        with gc_control.frozen_heap():  # full collections walk the comparison's own
            for _ in range(warmup):
                for i in rng.sample(order, len(order)):
                    res = once(i)
                    if res.status is not RunStatus.OK:
                        raise ConductError(
                            f"{commands[i]}: its warm-up run failed ({res.error or res.status}); "
                            "the command is broken, not noisy"
                        )
            while blocks < max_blocks and not (stop is not None and stop.is_set()):
                blocks += 1
                for i in rng.sample(order, len(order)):  # a fresh order, as schedule.block_order
                    res = once(i)
                    records.append((i, blocks, res))
                    if res.status is RunStatus.OK and res.value is not None:
                        per_block[i][blocks] = res.value
                        stats_of[i].times.append(res.value)
                        if res.user_s is not None:
                            stats_of[i].user.append(res.user_s)
                        if res.sys_s is not None:
                            stats_of[i].system.append(res.sys_s)
                        rss = getattr(res, "peak_rss_bytes", None)
                        if rss is not None:
                            stats_of[i].memory.append(rss)
                    stats_of[i].exit_codes.append(res.exit_code)
                if progress is not None:
                    progress(blocks, max_blocks)
                # The verdicts are read at the looks only, so only there are they computed: the
                # Walsh averages of every block cost more than a run of a short command.
                if blocks >= min_blocks and design.is_look(blocks):
                    _, decided = _relations(commands, per_block, threshold, design)
                    if decided:
                        stop_why = schedule.STOP_DECIDED
                        break
                if blocks >= max_blocks:
                    stop_why = "block limit reached"
                    break
                if schedule.budget_spent(blocks, time.monotonic() - t0, budget_s):
                    stop_why = schedule.STOP_BUDGET
                    break
    finally:
        hook(cleanup, "cleanup")
    if not all(s.times for s in stats_of):
        bad = next(s for s in stats_of if not s.times)
        raise ConductError(f"{bad.command}: no run gave a time (exit codes {bad.exit_codes[:5]})")
    final = stop_why != schedule.STOP_DECIDED
    relations, _ = _relations(commands, per_block, threshold, design, final=final)
    return CompareResult(
        stats_of,
        relations,
        blocks,
        stop_why,
        threshold,
        design,
        seed,
        records,
        str(where),
        round(time.monotonic() - t0, 3),
        shell,
        shell_cost,
    )


def _relations(
    commands: Sequence[str],
    per_block: list[dict[int, float]],
    threshold: float,
    design: sequential.Design,
    final: bool = False,
) -> tuple[list[Relation], bool]:
    out = []
    settled: list[bool] = []
    ref = per_block[0]
    for i in range(1, len(commands)):
        blocks = sorted(set(ref) & set(per_block[i]))
        d = paired_log_ratios([ref[b] for b in blocks], [per_block[i][b] for b in blocks])
        look = sequential.judge(d, threshold, design)
        shown = look.interval  # the interval that decided is the one shown
        note = "" if look.settled else undecided_words(look, shown, design, final)
        out.append(
            Relation(
                commands[i],
                shown.n,
                shown.ratio,
                shown.ci_low,
                shown.ci_high,
                look.verdict,
                note,
                look.confidence or design.confidence,
                threshold,
            )
        )
        settled.append(look.settled)
    return out, all(settled)


def _words(r: Relation) -> str:
    return change_words(r.verdict, r.ratio, r.threshold)


SAMPLE_COLUMNS = (
    "command_index", "command", "block", "status", "exit_code", "time_s", "user_s",
    "system_s", "memory_usage_byte",
)  # fmt: skip


def samples_csv(result: CompareResult) -> str:
    """Every timed run of a comparison as CSV, in the order they ran (warm-ups excluded,
    failed runs included with their status): `gpuopt compare --export-csv`."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(SAMPLE_COLUMNS)
    for i, block, res in result.records:
        rss = getattr(res, "peak_rss_bytes", None)
        w.writerow(
            [
                i,
                result.commands[i].command,
                block,
                res.status.value if hasattr(res.status, "value") else res.status,
                "" if res.exit_code is None else res.exit_code,
                repr(float(res.wall_s)) if res.status is RunStatus.OK else "",
                "" if res.user_s is None else repr(float(res.user_s)),
                "" if res.sys_s is None else repr(float(res.sys_s)),
                "" if rss is None else rss,
            ]
        )
    return out.getvalue()


def _relative(r: Relation) -> str:
    """The paired ratio with its interval, labelled as at every door (session.format):
    "1.030 (99.8% CI 1.010–1.050)" where hyperfine prints a ratio of means ± σ."""
    if r.ratio is None:
        return "—"
    if r.ci_low is None or r.ci_high is None:
        return f"{ratio_text(r.ratio)} (no interval yet)"
    return f"{ratio_text(r.ratio)} ({ci_text(r.ci_low, r.ci_high, r.confidence)})"


def hyperfine_markdown(result: CompareResult) -> str:
    """hyperfine's --export-markdown table (times in ms), with our verdict column; Relative
    is the paired ratio (time / the reference's) with the interval that decided."""
    lines = [
        "| Command | Mean [ms] | Min [ms] | Max [ms] | Relative | Verdict |",
        "|:---|---:|---:|---:|---:|:---|",
    ]
    rel = {r.command: r for r in result.relations}
    for c in result.commands:
        sd = c.stddev
        mean = f"{c.mean * 1e3:.1f} ± {sd * 1e3:.1f}" if sd is not None else f"{c.mean * 1e3:.1f}"
        r = rel.get(c.command)
        if r is None:
            ratio, verdict = "1.00", "reference"
        elif r.ratio is None:
            ratio, verdict = "—", str(r.verdict)
        else:
            ratio, verdict = _relative(r), str(r.verdict)
            said = _words(r)
            if said:
                verdict += f" {said}"
        cmd = c.command.replace("|", "\\|")
        lines.append(
            f"| `{cmd}` | {mean} | {min(c.times) * 1e3:.1f} | "
            f"{max(c.times) * 1e3:.1f} | {ratio} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


# The null object id of git: a compare measures commands, not commits.
NO_COMMIT = "0" * 40
WORKLOAD = "compare"


def store(ledger: Any, result: CompareResult, title: str | None = None) -> Any:
    """Keep a comparison as a session of its own, in the models a session uses, so
    `gpuopt sessions`, `review` and `export` show it: the reference command is the session's
    one workload and its baseline arm, every other command a variant (its command as the
    variant's source), and one round holds the runs and the comparisons. There is no git
    snapshot (git's null id), and the baseline is the reference's median in this round,
    not a judged baseline. One transaction: all of it or nothing. Returns the session."""
    # Here, not at the head: only `compare --ledger` stores, and the models (pydantic)
    # and host facts would be start-up time every `compare -N` pays (budget: 0.3 s).
    import os
    import platform
    import socket
    import sys

    from session import models as m

    ref = result.commands[0]
    at = m.utcnow()
    contract = m.Contract(
        workloads=[m.Workload(name=WORKLOAD, command=ref.command)],
        threshold=result.threshold,
    )
    session = m.Session(
        title=title or "compare: " + " vs ".join(c.command for c in result.commands),
        repo=result.cwd or str(Path.cwd()),
        contract=contract,
        created_at=at,
    )
    snap = m.Snapshot(commit=NO_COMMIT, ref="no git snapshot (gpuopt compare)", created_at=at)
    base = m.Baseline(
        id=m.new_id(),
        session_id=session.id,
        snapshot=snap,
        environment=m.EnvironmentFingerprint(
            python=sys.version.split()[0],
            os=platform.platform(),
            cpu_count=os.cpu_count() or 0,
            hostname=socket.gethostname(),
        ),
        contract_hash=contract.stable_hash(),
        runs_per_workload=max(2, ref.runs),
        reference={WORKLOAD: ref.median},
        reproducibility_detail="gpuopt compare judges no baseline: its verdicts are paired",
        threshold=result.threshold,
        created_at=at,
    )
    variants = [
        m.Variant(
            session_id=session.id,
            name=f"command-{k}",
            snapshot=snap,
            source=c.command,
            created_at=at,
        )
        for k, c in enumerate(result.commands[1:], 2)
    ]
    arms = ["baseline", *(v.id for v in variants)]
    named = [f"baseline = {ref.command}"] + [f"{v.name} = {v.source}" for v in variants]
    rnd = m.Round(
        session_id=session.id,
        baseline_id=base.id,
        variant_ids=[v.id for v in variants],
        seed=result.seed,
        min_blocks=result.design.looks[0],
        max_blocks=result.design.max_blocks,
        threshold=result.threshold,
        status=m.RoundStatus.INTERRUPTED
        if result.stop_reason == "interrupted"
        else m.RoundStatus.COMPLETED,
        blocks=result.blocks,
        summary={
            "stop_reason": result.stop_reason,
            "elapsed_s": result.elapsed_s,
            "notes": ["measured by gpuopt compare: " + "; ".join(named)],
        },
        started_at=at,
        ended_at=m.utcnow(),
    )
    runs = [
        m.Run(
            session_id=session.id,
            round_id=rnd.id,
            arm=arms[i],
            workload=WORKLOAD,
            block=block,
            status=res.status,
            value=res.value,
            exit_code=res.exit_code,
            wall_s=res.wall_s,
            user_s=res.user_s,
            sys_s=res.sys_s,
            peak_rss_bytes=res.peak_rss_bytes,
            stdout_tail=res.stdout_tail[-4096:],
            stderr_tail=res.stderr_tail[-4096:],
            started_us=res.started_us,
            ended_us=res.ended_us,
            error=res.error,
            containment=res.containment,
            minor_faults=res.minor_faults,
            major_faults=res.major_faults,
        )
        for i, block, res in result.records
    ]
    comparisons = [
        m.Comparison(
            round_id=rnd.id,
            variant_id=v.id,
            workload=WORKLOAD,
            n=r.n,
            ratio=r.ratio,
            ci_low=r.ci_low,
            ci_high=r.ci_high,
            confidence=r.confidence,
            verdict=r.verdict,
            failed_runs=sum(
                1 for i, _, res in result.records if i == k and res.status is not RunStatus.OK
            ),
            note=r.note,
        )
        for k, (v, r) in enumerate(zip(variants, result.relations, strict=True), 1)
    ]
    with ledger.write():
        ledger.put(session, base, *variants, rnd, *runs, *comparisons)
    return session
