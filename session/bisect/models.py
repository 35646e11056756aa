"""The stored shape of a bisection: its commits, each step's round and verdicts, its answer.

One record per bisection (ledger table `bisections`, migration m003_bisections); the
search state is never stored, it is rebuilt from the steps (session.bisect.search.replay),
so a resumed bisection takes up exactly where the stored steps leave it.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from session import models as m


class Side(StrEnum):
    """Where a step put its midpoint, from the verdicts against the interval's two ends."""

    GOOD = "good"  # within the band of the good-side end, over it from the other
    BAD = "bad"  # over the band from the good-side end, within it of the bad-side end
    BOTH = "both"  # over the band from both ends: a change in each half
    NEITHER = "neither"  # within the band of both: no single step over the band here
    LEANS_GOOD = "leans good"  # over the band from the bad-side end; the other undecided
    LEANS_BAD = "leans bad"  # over the band from the good-side end; the other undecided
    UNDECIDED = "undecided"  # the step's block limit came first
    SKIPPED = "skipped"  # the midpoint failed to build, run or pass the check
    INTERRUPTED = "interrupted"  # stopped from outside: measured again on resume


class Status(StrEnum):
    RUNNING = "running"
    INTERRUPTED = "interrupted"
    COMPLETED = "completed"
    FAILED = "failed"


class Model(BaseModel):
    # Validators built on first use, as session.models' are: every command line imports
    # these (the ledger's store does), and building five at import took it 10 ms or more.
    model_config = ConfigDict(extra="ignore", defer_build=True)


class Judged(Model):
    """One paired comparison of a step: ratio = the commit / the end it is compared with
    (below 1 is better), the interval that decided and its confidence, and the sequential
    rule's verdict."""

    verdict: m.Verdict
    n: int = 0
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    # The confidence of ci_low..ci_high (the design's, or its wider change interval's).
    # None in steps stored before it was kept: their interval is the 95% one.
    confidence: float | None = Field(default=None, gt=0, lt=1)
    min_effect: float | None = None  # undecided: the smallest effect the limit resolves
    blocks_needed: int | None = None  # undecided: forecast to decide; None: not in the limit
    # False: a MEASURABLE change whose estimate lies beyond the band, so more blocks may
    # still clear it (measure.sequential's `settled`); not yet "within the band".
    settled: bool = True
    note: str = ""

    def inverted(self) -> Judged:
        """The same comparison the other way round (end / commit)."""
        flip = {m.Verdict.FASTER: m.Verdict.SLOWER, m.Verdict.SLOWER: m.Verdict.FASTER}

        def inv(x: float | None) -> float | None:
            return None if x is None or x <= 0 else 1 / x

        return self.model_copy(
            update={
                "verdict": flip.get(self.verdict, self.verdict),
                "ratio": inv(self.ratio),
                "ci_low": inv(self.ci_high),
                "ci_high": inv(self.ci_low),
            }
        )


class Commit(Model):
    sha: str
    subject: str = ""
    author: str = ""


class Spec(Model):
    """What runs in each commit's checkout, and how its figure is read."""

    workload: str  # its name
    command: str
    metric_source: str = "wall"  # wall | regex | json
    metric_pattern: str | None = None
    metric_name: str = "wall time"
    unit: str = "s"
    higher: bool = False  # True when a higher figure is better
    env: dict[str, str] = Field(default_factory=dict)
    launcher: str | None = None
    timeout_s: float = 600.0
    setup: str | None = None  # the build: once per commit, in its checkout
    check: str | None = None  # the correctness check: once per commit
    prepare: str | None = None  # before every run


class Step(Model):
    """One step: a round of the commits lo, mid and hi (indices into the commits), or the
    first round of good against bad (kind "confirm", no mid)."""

    number: int
    kind: str = "step"  # "confirm" | "step"
    lo: int
    hi: int
    mid: int | None = None
    side: Side | None = None  # a step's outcome (None for the confirm round)
    vs_lo: Judged | None = None  # mid / lo; for the confirm round: bad / good
    vs_hi: Judged | None = None  # mid / hi
    reason: str = ""  # why a commit was skipped, or how the round ended
    blocks: int = 0
    runs: int = 0
    elapsed_s: float = 0.0
    quarantined: int = 0  # runs whose telemetry was untrusted (their blocks run again)
    left_out: list[int] = Field(default_factory=list)  # blocks untrusted in every attempt
    seed: int = 0
    values: dict[str, dict[int, float]] = Field(default_factory=dict)  # sha -> block -> value


class Bisection(Model):
    id: str = Field(default_factory=m.new_id)
    session_id: str | None = None
    repo: str
    good: str  # as the person named them
    bad: str
    commits: list[Commit]  # good first, bad last, in history order
    spec: Spec
    threshold: float
    min_blocks: int = 10
    max_blocks: int = 40
    status: Status = Status.RUNNING
    steps: list[Step] = Field(default_factory=list)
    answer: dict[str, Any] | None = None  # session.bisect.search.Answer, as stored
    error: str = ""
    owner: dict[str, Any] = Field(default_factory=dict)  # pid, started, host of its runner
    slurm: list[str] | None = None  # sbatch's options: each step is a Slurm job (on resume too)
    created_at: datetime = Field(default_factory=m.utcnow)
    updated_at: datetime = Field(default_factory=m.utcnow)

    def short(self, index: int) -> str:
        return self.commits[index].sha[:10]
