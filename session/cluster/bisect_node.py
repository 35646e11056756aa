"""A bisection step on a compute node: the probe's commits checked out, built, checked and
measured in one interleaved round, as `gpuopt bisect` measures a step here.

The login side keeps the bisection's record in its ledger and sends one step per job
(session.cluster.bisect_jobs). The node writes one `run` line per timing run, `progress`
lines per block, and one `step` line with the measured step (or its `error`: an end that
failed), all to the job's journal; it opens no ledger. SIGTERM stops it after the
current run, and the step it writes then is interrupted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from measure.journal import JournalWriter
from measure.monitor import NullMonitor, RunMonitor
from measure.worktrees import Worktrees
from session.bisect import conduct
from session.bisect.models import Bisection, Side
from session.bisect.search import Probe, replay
from session.conduct.common import ConductError, Progress

__all__ = ["measure_step"]


class _JournaledTrees(conduct._Trees):
    """The conductor's worktrees, each timing run also said in the journal."""

    def __init__(self, wts: Worktrees, rec: Bisection, monitor: RunMonitor, journal: JournalWriter):
        super().__init__(wts, rec, monitor)
        self.journal = journal

    def sampler(self) -> Callable[[int, int], tuple[float | None, str]]:
        inner = super().sampler()

        def sample(i: int, block: int) -> tuple[float | None, str]:
            value, why = inner(i, block)
            self.journal.write("run", commit=i, sha=self.rec.commits[i].sha, block=block,
                               value=value, why=why)  # fmt: skip
            return value, why

        return sample


def measure_step(
    spec: dict[str, Any], stop: threading.Event, journal: JournalWriter, progress_entry: Any
) -> str:
    """Measure the spec's step; the job's end status."""
    rec = Bisection.model_validate(spec["bisection"])
    probe = Probe(**spec["probe"])
    state = replay(len(rec.commits), iter(rec.steps))
    monitor: Any = NullMonitor()
    if spec.get("telemetry"):
        from session.telemetry_access import make_monitor

        monitor = make_monitor(None, None)  # trust per run, as here: no samples are kept

    def live(line: str) -> None:
        journal.write("progress", durable=False, progress=progress_entry(Progress("bisect", line)))

    try:
        with Worktrees(rec.repo) as wts:
            trees = _JournaledTrees(wts, rec, monitor, journal)
            try:
                step = conduct._step(rec, state, probe, trees, stop.is_set, live)
            except ConductError as exc:
                journal.write("step", number=len(rec.steps) + 1, error=str(exc))
                return "failed"
    finally:
        getattr(monitor, "close", lambda: None)()
    journal.write("step", number=step.number, step=step.model_dump(mode="json"))
    return "interrupted" if step.side is Side.INTERRUPTED else "completed"
