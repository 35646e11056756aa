"""What a step pane asks of the screen that holds it, as typed messages that bubble up.

A pane never calls its screen: it posts one of these, and whoever holds the pane (the
session screen, or a test's own small app) answers. What a pane needs to know of its
surroundings comes down to it in a `PaneContext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from session import models as m


@dataclass
class PaneContext:
    """What a pane knows of its surroundings, kept up to date by whoever shows it."""

    ledger: Any = None
    readonly: bool = False
    busy: str | None = None  # "baseline" or "round" while one runs
    narrow: bool = False
    draft: dict[str, str] = field(default_factory=dict)


class SaveSession(Message):
    def __init__(self, session: m.Session) -> None:
        super().__init__()
        self.session = session


class SaveModels(Message):
    """Records to save; `reads`: for a preflight answer, by question, the answer as the
    pane read it (the answer itself where there was none): written field by field onto
    the newest stored one, refused where it was changed elsewhere meanwhile."""

    def __init__(self, *items: Any, note: str = "saved", reads: dict[Any, Any] | None = None):
        super().__init__()
        self.items = items
        self.note = note
        self.reads = reads or {}


class ReloadView(Message):
    """Read the session again (after a conflict the person answered with 'reload')."""


class AddHypothesis(Message):
    def __init__(self, values: dict[str, Any]) -> None:
        super().__init__()
        self.values = values


class EditHypothesis(Message):
    def __init__(self, hypothesis: m.Hypothesis, values: dict[str, Any]) -> None:
        super().__init__()
        self.hypothesis = hypothesis
        self.values = values


class AskHypothesisStatus(Message):
    def __init__(self, hypothesis: m.Hypothesis) -> None:
        super().__init__()
        self.hypothesis = hypothesis


class StartBaseline(Message):
    def __init__(
        self,
        runs: int,
        warmup: int,
        max_runs: int | None = None,
        threshold: float | None = None,
        budget_s: float | None = None,
    ) -> None:
        super().__init__()
        self.runs = runs
        self.warmup = warmup
        self.max_runs = max_runs  # None: gpuopt baseline's default
        self.threshold = threshold  # None: the contract's
        self.budget_s = budget_s  # None: no time budget


class StartRound(Message):
    def __init__(
        self,
        min_blocks: int,
        max_blocks: int,
        threshold: float | None = None,
        budget_s: float | None = None,
    ) -> None:
        super().__init__()
        self.min_blocks = min_blocks
        self.max_blocks = max_blocks
        self.threshold = threshold  # None: the contract's
        self.budget_s = budget_s  # None: no time budget


class StopWork(Message):
    """Stop the running baseline or round after its current run."""


class AskVariant(Message):
    """Open the form that adds a variant."""


class AskResidual(Message):
    """Open the form that confirms a residual."""


class AskEvidence(Message):
    """Open the form that attaches evidence (to this hypothesis, or to the session)."""

    def __init__(self, hypothesis: m.Hypothesis | None) -> None:
        super().__init__()
        self.hypothesis = hypothesis


class AskDisposition(Message):
    def __init__(self, variant: m.Variant) -> None:
        super().__init__()
        self.variant = variant


class ExportRecord(Message):
    """Write the decision record (markdown and JSON)."""
