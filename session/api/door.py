"""The session door: `Session(ledger, session_id)` wraps the session layer's rules (the
preflight's evidence rule, the add-variant warnings, the block minimum, the managed
rename/archive/delete), so the app never calls the store itself. Each change returns a
`Result`: its value, the warnings to show and the next step, as data with one words
function each; the front end only renders them. Front ends import it from session.api.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from session import dispositions, hypotheses, preflight
from session import models as m
from session.blocks import blocks_problem
from session.cluster import jobs
from session.manage import DeleteReport, archive_session, delete_session, rename_session
from session.read_model import (
    SessionView,
    confirm_residual,
    evidence_of,
    load_view,
    stored_preflight,
    stored_session,
)
from session.record_files import export_record, record_markdown
from session.variants import VariantWarning, add_variant, variant_warnings

T = TypeVar("T")

__all__ = [
    "NextStep",
    "PreflightEdit",
    "Result",
    "Session",
    "baseline_problem",
    "round_problem",
]


@dataclass(frozen=True)
class NextStep:
    step: m.StepName
    text: str

    def words(self) -> str:
        return self.text


@dataclass(frozen=True)
class Result(Generic[T]):
    value: T
    warnings: tuple[VariantWarning, ...] = ()
    next_step: NextStep | None = None

    def words(self) -> list[str]:
        return [w.words() for w in self.warnings]


@dataclass(frozen=True)
class PreflightEdit:
    """One answer as a form holds it; written through `preflight.set_answer`."""

    question: m.PreflightQuestion
    kind: m.PreflightAnswerKind
    text: str = ""
    evidence_id: str | None = None
    concern_area: m.ConcernArea | None = None


def round_problem(
    min_blocks: int, max_blocks: int, threshold: float | None = None, budget_s: float | None = None
) -> str | None:
    """Why a round with these settings is refused before it starts (None: it may run)."""
    return blocks_problem(min_blocks, max_blocks) or _band_problem(threshold, budget_s)


def baseline_problem(
    runs: int,
    warmup: int,
    max_runs: int | None = None,
    threshold: float | None = None,
    budget_s: float | None = None,
) -> str | None:
    """Why a baseline with these settings is refused before it starts (None: it may run):
    the refusals of `conduct.record_baseline` and `gpuopt baseline`, said before a run."""
    if runs < 2:
        return "a baseline needs at least 2 runs per workload"
    if warmup < 0:
        return "warm-up runs cannot be negative"
    if max_runs is not None and max_runs < runs:
        return f"max runs ({max_runs}) is below the minimum of runs ({runs})"
    return _band_problem(threshold, budget_s)


def _band_problem(threshold: float | None, budget_s: float | None) -> str | None:
    if threshold is not None and not 0 < threshold < 1:
        return "the threshold must lie between 0 and 1 (e.g. 0.02 for 2%)"
    if budget_s is not None and not budget_s > 0:
        return "the time budget must be positive"
    return None


@dataclass
class Session:
    """One session of one ledger, as a front end changes and reads it."""

    ledger: Any  # a ledger.Ledger (LedgerLike for the rules; the jobs want the store)
    session_id: str | None = None
    _read: Any = field(default=None, repr=False)

    # ---------------------------------------------------------------- reads

    def view(self) -> SessionView:
        assert self.session_id is not None
        return load_view(self.ledger, self.session_id)

    def stored(self, session_id: str | None = None) -> m.Session | None:
        """The session row as stored now (None: gone)."""
        sid = session_id or self.session_id
        return stored_session(self.ledger, sid) if sid else None

    def evidence(self, hypothesis_id: str | None = None) -> list[m.Evidence]:
        return evidence_of(self.ledger, self._sid(None), hypothesis_id)

    def preflight_answers(self) -> dict[m.PreflightQuestion, m.PreflightAnswer]:
        return stored_preflight(self.ledger, self._sid(None))

    def advised_threshold(self, session: m.Session, baseline: m.Baseline) -> float | None:
        """The band a baseline too noisy for its own lets a round use (the baseline's
        advice, `--threshold X`); None when it is not too noisy or its noise is unknown."""
        from session import conduct

        got = conduct.outcome(self.ledger, session, baseline)
        if got is None or not got.warns:
            return None
        if got in (conduct.Outcome.TOO_FEW, conduct.Outcome.DRIFTING):
            return None
        delta = session.contract.threshold if baseline.threshold is None else baseline.threshold
        fit = conduct.supported_band(conduct.judge_baseline(self.ledger, session, baseline, delta))
        return float(f"{fit:.3g}") if fit is not None else None

    def baseline(self, baseline_id: str) -> m.Baseline | None:
        found: m.Baseline | None = self.ledger.get(m.Baseline, baseline_id)
        return found

    def variant(self, ref: str) -> m.Variant:
        """The variant `ref` names (an id, a unique prefix or its name); LedgerError if none."""
        found: m.Variant = self.ledger.variant(self._sid(None), ref)
        return found

    def variants(self) -> list[m.Variant]:
        return list(self.ledger.list(m.Variant, session_id=self._sid(None)))

    def hypothesis(self, hypothesis_id: str) -> m.Hypothesis | None:
        found: m.Hypothesis | None = self.ledger.get(m.Hypothesis, hypothesis_id)
        return found

    def hypotheses(self) -> list[m.Hypothesis]:
        """This session's hypotheses, oldest first."""
        return list(
            self.ledger.list(m.Hypothesis, session_id=self._sid(None), order_by="created_at, rowid")
        )

    def residual(self, residual_id: str) -> m.Residual | None:
        found: m.Residual | None = self.ledger.get(m.Residual, residual_id)
        return found

    def rounds(self) -> list[m.Round]:
        """This session's rounds in their order."""
        return list(self.ledger.list(m.Round, session_id=self._sid(None), order_by="number, rowid"))

    def comparisons(self, round_id: str) -> list[m.Comparison]:
        return list(self.ledger.list(m.Comparison, round_id=round_id))

    def correctness(self) -> list[m.CorrectnessResult]:
        return list(self.ledger.list(m.CorrectnessResult, session_id=self._sid(None)))

    def preflight(self, session: m.Session) -> preflight.PreflightView:
        return preflight.view(self.ledger, session)

    def checklist(self, session: m.Session) -> list[m.ChecklistItem]:
        return preflight.checklist(self.ledger, session)

    # ---------------------------------------------------------------- changes

    def save(self, session: m.Session, read: Any = None) -> Result[m.Session]:
        """Write the session over the version `read` (None: a new one); a version changed
        elsewhere meanwhile raises the store's ConflictError (changed fields, current)."""
        if read is None:
            self.ledger.put(session)
        else:
            self.ledger.put_if_unchanged(session, read)
        self.session_id = session.id
        return Result(session)

    def answer_preflight(
        self,
        session: m.Session,
        edits: Iterable[PreflightEdit],
        reads: dict[m.PreflightQuestion, m.PreflightAnswer] | None = None,
    ) -> Result[list[m.PreflightAnswer]]:
        """Answers written together, each through the evidence rule (measured evidence
        must exist in this session) and field by field onto the answer as read."""
        out: list[m.PreflightAnswer] = []
        with self.ledger.write():
            for e in edits:
                out.append(
                    preflight.set_answer(
                        self.ledger,
                        session,
                        e.question,
                        e.kind,
                        e.text,
                        evidence_id=e.evidence_id,
                        concern_area=e.concern_area,
                        read=(reads or {}).get(e.question),
                    )
                )
        return Result(out)

    def set_bottleneck(
        self, session: m.Session, bottleneck: str, evidence: str
    ) -> Result[m.Session]:
        return Result(preflight.set_bottleneck(self.ledger, session, bottleneck, evidence))

    def set_checklist(self, session: m.Session, number: int, done: bool) -> Result[m.ChecklistItem]:
        return Result(preflight.set_checklist(self.ledger, session, number, done))

    def add_hypothesis(
        self, session: m.Session, **fields: Any
    ) -> Result[tuple[m.Hypothesis, list[m.Hypothesis]]]:
        return Result(hypotheses.add_hypothesis(self.ledger, session, **fields))

    def edit_hypothesis(self, h: m.Hypothesis, why: str, **fields: Any) -> Result[m.Hypothesis]:
        """Only the fields given, onto the stored hypothesis (EditConflict: changed elsewhere)."""
        return Result(hypotheses.edit_hypothesis(self.ledger, h, why, **fields))

    def set_hypothesis_status(
        self, h: m.Hypothesis, status: m.HypothesisStatus, why: str, **how: Any
    ) -> Result[Any]:
        return Result(hypotheses.set_status(self.ledger, h, status, why, **how))

    def confirm_residual(
        self, view: SessionView, v: m.Variant, residual: m.ResidualClass, note: str
    ) -> Result[m.Residual]:
        return Result(confirm_residual(self.ledger, view, v, residual, note))

    def decide(
        self, session: m.Session, v: m.Variant, choice: m.DispositionChoice, **how: Any
    ) -> Result[m.Disposition]:
        """Keep, reject or defer a variant through its gates (GateRefusal says what lacks)."""
        return Result(dispositions.dispose(self.ledger, session, v, choice, **how))

    def record(self, session: m.Session, view: SessionView | None = None) -> str:
        """The decision record as markdown (from `view` when one was read)."""
        return record_markdown(self.ledger, session, view)

    def export(self, session: m.Session, directory: str | Path) -> Result[Path]:
        return Result(export_record(self.ledger, session, directory))

    def record_baseline(self, session: m.Session, **how: Any) -> Result[m.Baseline]:
        """Measure the baseline where the contract says (here, or a Slurm job)."""
        return Result(jobs.baseline_where_contracted(self.ledger, session, **how))

    def run_round(self, session: m.Session, **how: Any) -> Result[m.Round]:
        """Run a round where the contract says; its block bounds obey `round_problem`."""
        return Result(jobs.round_where_contracted(self.ledger, session, **how))

    def put(self, *items: Any) -> Result[tuple[Any, ...]]:
        """Rows a form made whole (evidence, residual, disposition), written together."""
        with self.ledger.write():
            for item in items:
                self.ledger.put(item)
        return Result(items)

    def add_variant(self, session: m.Session, name: str, **how: Any) -> Result[m.Variant]:
        """The race-safe add (no snapshot ref left behind when it fails), with the warnings
        the CLI prints: uncommitted baseline edits, identical tree, too many files."""
        variant = add_variant(self.ledger, session, name, **how)
        return Result(
            variant,
            tuple(variant_warnings(self.ledger, session, variant)),
            NextStep(m.StepName.ROUND, "run a round with this variant"),
        )

    def rename(self, title: str, session_id: str | None = None) -> Result[m.Session]:
        return Result(rename_session(self.ledger, self._sid(session_id), title))

    def archive(self, archived: bool = True, session_id: str | None = None) -> Result[m.Session]:
        return Result(archive_session(self.ledger, self._sid(session_id), archived=archived))

    def delete(
        self, session_id: str | None = None, with_refs: bool = False
    ) -> Result[DeleteReport]:
        return Result(delete_session(self.ledger, self._sid(session_id), with_refs=with_refs))

    def _sid(self, session_id: str | None) -> str:
        sid = session_id or self.session_id
        assert sid is not None
        return sid
