"""What the step panes ask of the session screen (tui.screens.pane_messages), each
message handed to the screen's part that does it.
"""

from __future__ import annotations

from tui.screens.pane_messages import (
    AddHypothesis,
    AskDisposition,
    AskEvidence,
    AskHypothesisStatus,
    AskResidual,
    AskVariant,
    EditHypothesis,
    ExportRecord,
    ReloadView,
    SaveModels,
    SaveSession,
    StartBaseline,
    StartRound,
    StopWork,
)
from tui.screens.session_engine import EngineWork
from tui.screens.session_forms import SessionForms
from tui.screens.steps.hypotheses import HypothesesPane


class PaneRequests(EngineWork, SessionForms):
    """One handler per message a pane posts."""

    def on_save_session(self, msg: SaveSession) -> None:
        self.save_session(msg.session)

    def on_save_models(self, msg: SaveModels) -> None:
        self.save_models(*msg.items, note=msg.note, reads=msg.reads)

    def on_reload_view(self, _msg: ReloadView) -> None:
        self.reload()

    def on_add_hypothesis(self, msg: AddHypothesis) -> None:
        similar = self.add_hypothesis(msg.values)
        if similar is not None:
            self.query_one(HypothesesPane).hypothesis_added(similar)

    def on_edit_hypothesis(self, msg: EditHypothesis) -> None:
        self.edit_hypothesis(msg.hypothesis, msg.values)

    def on_ask_hypothesis_status(self, msg: AskHypothesisStatus) -> None:
        self.ask_hypothesis_status(msg.hypothesis)

    def on_start_baseline(self, msg: StartBaseline) -> None:
        self.start_baseline(
            msg.runs,
            msg.warmup,
            max_runs=msg.max_runs,
            threshold=msg.threshold,
            budget_s=msg.budget_s,
        )

    def on_start_round(self, msg: StartRound) -> None:
        self.start_round(msg.min_blocks, msg.max_blocks, msg.threshold, msg.budget_s)

    def on_stop_work(self, _msg: StopWork) -> None:
        self.stop_work()

    def on_ask_variant(self, _msg: AskVariant) -> None:
        self.ask_variant()

    def on_ask_residual(self, _msg: AskResidual) -> None:
        self.ask_residual()

    def on_ask_evidence(self, msg: AskEvidence) -> None:
        self.ask_evidence(msg.hypothesis)

    def on_ask_disposition(self, msg: AskDisposition) -> None:
        self.ask_disposition(msg.variant)

    def on_export_record(self, _msg: ExportRecord) -> None:
        self.export_record()
