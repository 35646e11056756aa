"""The hypotheses step: write each hypothesis before editing code; see its history."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Input, Static

from session import models as m
from session.api import Session, hypotheses_next, similar_rejected
from session.api import describe_evidence as describe
from session.read_model import SessionView
from tui.display import cell, plain, shown
from tui.screens.modals import ConfirmModal
from tui.screens.pane_messages import (
    AddHypothesis,
    AskEvidence,
    AskHypothesisStatus,
    EditHypothesis,
)
from tui.screens.step_base import StepPane, clip
from tui.screens.steps.round import RoundPane
from tui.widgets.form import Field, clear_errors, show_errors

DIRECTION_CHOICES = [("metric goes down", "lower"), ("metric goes up", "higher")]
CONFIDENCE_CHOICES = [(c.value, c.value) for c in m.Confidence]


class HypothesesPane(StepPane):
    step = m.StepName.HYPOTHESES
    GUIDANCE = (
        "Write down why a change should help before making it: what you see, the mechanism, "
        "what the metric and an independent signal should do, and the cheapest test that "
        "would prove you wrong. Similar ideas rejected before are shown as you type."
    )
    # `t` for status: `x` is "export" elsewhere, and one key means one thing everywhere.
    # `+` is shown (the Next line names it; a new user looked for it in the footer), with
    # short words ("new", "attach") so that the footer at 80 columns keeps ^q quit.
    BINDINGS = [
        Binding("ctrl+s,f2", "save", "save", tooltip="Save the hypothesis in the form",
                id="hypotheses.save"),
        Binding("w", "write", "new", tooltip="Write a new hypothesis",
                id="hypotheses.write"),
        Binding("e", "edit", "edit", tooltip="Edit the selected hypothesis",
                id="hypotheses.edit"),
        Binding("t", "status", "status", tooltip="Set the selected hypothesis' status",
                id="hypotheses.status"),
        Binding("plus", "evidence", "attach",
                tooltip="Add evidence (a note, a file, a profile) to the selected hypothesis",
                id="hypotheses.evidence"),
    ]  # fmt: skip
    WRITES = StepPane.WRITES | {"evidence"}

    editing: str | None = None
    editing_from: m.Hypothesis | None = None

    def body(self) -> ComposeResult:
        yield DataTable(id="hyp-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="hyp-evidence")
        yield Static("", id="hyp-similar")
        with Vertical(id="hyp-form"):
            yield Static("", id="hyp-form-title", classes="form-title")
            yield Field("title", "Title", placeholder="e.g. fuse the max and exp passes")
            yield Field("symptom", "Symptom (what you observe)")
            yield Field("mechanism", "Mechanism (why it happens)")
            yield Field(
                "predicted_effect",
                "Predicted effect on the metric",
                placeholder="e.g. 20-30% less time",
            )
            with Horizontal(classes="row"):
                yield Field(
                    "predicted_direction",
                    "Direction",
                    "lower",
                    choices=DIRECTION_CHOICES,
                    allow_blank=True,  # unset, as `gpuopt hypothesis add` leaves it
                )
                yield Field("confidence", "Confidence", "medium", choices=CONFIDENCE_CHOICES)
            yield Field(
                "predicted_evidence",
                "Independent evidence that should move",
                placeholder="e.g. fewer kernel launches",
            )
            yield Field("falsifier", "Cheapest falsifier")

    def built(self) -> None:
        t = self.query_one("#hyp-table", DataTable)
        t.add_columns("id", "title", "status", "conf", "variants")

    def fields(self) -> list[Field]:
        return list(self.query("#hyp-form Field").results(Field))

    def next_hint(self, view: SessionView | None) -> str:
        keys = self.step_keys(
            save="hypotheses.save", write="hypotheses.write", attach="hypotheses.evidence"
        )
        add = f"{keys.round_step}, then {self.key_in(RoundPane, 'round.add_variant')}"
        return hypotheses_next(view, keys, add_variant=add)

    def refresh_body(self, view: SessionView | None) -> None:
        t = self.query_one("#hyp-table", DataTable)
        t.clear()
        self.query_one("#hyp-form").display = not self.readonly and view is not None
        title = "Editing " + plain(self.editing[:8]) if self.editing else "New hypothesis"
        self.query_one("#hyp-form-title", Static).update(Text(title, style="bold"))
        if view is None:
            return
        t.display = bool(view.hypotheses)
        # the title gives way (with an ellipsis) so status and confidence always show
        title_w = max(self.content_size.width - TABLE_OTHER_COLUMNS, 12)
        for h in view.hypotheses:
            n = sum(1 for v in view.variants if v.hypothesis_id == h.id)
            t.add_row(
                cell(h.id[:8]),
                clip(h.title, title_w),
                status_text(h.status),
                h.confidence.value,
                str(n),
                key=h.id,
            )
        self.show_evidence()

    def show_evidence(self) -> None:
        """The evidence attached to the selected hypothesis, listed under the table."""
        box = self.query_one("#hyp-evidence", Static)
        h = self.selected()
        ledger = self.context.ledger
        found = (
            Session(ledger, h.session_id).evidence(h.id)
            if h is not None and ledger is not None
            else []
        )
        box.display = bool(found)
        if not found:
            return
        t = Text()
        t.append(f"Evidence for {plain(h.id[:8]) if h else ''}:\n", style="bold")
        for e in found:
            t.append("  • ", style="dim")
            t.append(shown(describe(e), 300))
            t.append("\n")
        t.rstrip()
        box.update(t)

    def on_data_table_row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self.show_evidence()

    def focus_form(self) -> None:
        if self.query_one("#hyp-form").display:
            self.query_one("#field-title Input", Input).focus()

    def values(self) -> dict[str, Any]:
        vals: dict[str, Any] = {f.field_name: f.value for f in self.fields()}
        vals["predicted_direction"] = vals.get("predicted_direction") or None
        vals["confidence"] = vals.get("confidence") or "medium"
        return vals

    def on_input_changed(self, event: Input.Changed) -> None:
        if self.view is None:
            return
        self._similar_timer = getattr(self, "_similar_timer", None)
        if self._similar_timer is not None:
            self._similar_timer.stop()
        self._similar_timer = self.set_timer(0.3, self.update_similar)

    def update_similar(self) -> None:
        view = self.view
        if view is None:
            return
        vals = self.values()
        try:
            probe = m.Hypothesis(
                session_id=view.session.id,
                title=vals["title"] or "-",
                symptom=vals["symptom"],
                mechanism=vals["mechanism"],
                predicted_effect=vals["predicted_effect"],
            )
        except ValidationError:
            return
        found = similar_rejected(self.context.ledger, probe)
        self.show_similar(found)

    def show_similar(self, found: list[m.Hypothesis]) -> None:
        box = self.query_one("#hyp-similar", Static)
        if not found:
            box.update("")
            box.display = False
            return
        box.display = True
        t = Text()
        t.append("Rejected before, and similar:\n", style="bold yellow")
        for h in found:
            t.append(f"  {plain(h.id[:8])} ", style="dim")
            t.append(shown(h.title, style="bold"))
            why = h.reopen_when or h.mechanism
            if why:
                t.append(f" — {plain(why)}", style="dim")
            t.append("\n")
        box.update(t)

    def action_save(self) -> None:
        view = self.view
        if view is None or self.readonly:
            return
        fields = self.fields()
        clear_errors(fields)
        vals = self.values()
        if self.editing:
            # the version the form was filled from: what the person changed is told
            # apart from what changed in the ledger since
            old = self.editing_from or view.hypothesis(self.editing)
            if old is None:
                return
            try:
                m.Hypothesis.model_validate({**old.model_dump(), **vals})
                self.post_message(EditHypothesis(old, vals))
            except ValidationError as exc:
                show_errors(fields, exc)
                return
            self.editing = None
            self.editing_from = None
            self.clear_form()
            return
        try:
            m.Hypothesis(session_id=view.session.id, **vals)
        except ValidationError as exc:
            show_errors(fields, exc)
            return
        self.post_message(AddHypothesis(vals))

    def hypothesis_added(self, similar: list[m.Hypothesis]) -> None:
        """The screen saved the new hypothesis: an empty form, and the similar rejected ones."""
        self.clear_form()
        self.show_similar(similar)

    def clear_form(self) -> None:
        for f in self.fields():
            if f.choices is None:
                f.value = ""

    def unsaved(self) -> bool:
        """The form holds text that is not stored: typed into a new one, or edited."""
        if self.readonly or not self.built_body:
            return False
        vals = {f.field_name: f.value for f in self.fields() if f.choices is None}
        if self.editing_from is not None and self.editing:
            old = self.editing_from
            return any(v != _text(getattr(old, k, "")) for k, v in vals.items())
        return any(v.strip() for v in vals.values())

    def action_write(self) -> None:
        """An empty form for a new hypothesis; asked first if the form holds unsaved text."""
        if self.readonly:
            return
        if not self.unsaved():
            self._write_new()
            return

        def answered(discard: bool | None) -> None:
            if discard:
                self._write_new()
            else:
                self.focus_form()

        self.app.push_screen(
            ConfirmModal(
                "The hypothesis in the form is not saved. Discard it and start a new one?"
            ),
            answered,
        )

    def _write_new(self) -> None:
        self.editing = None
        self.editing_from = None
        self.clear_form()
        self.show(self.view)
        self.focus_form()

    def action_evidence(self) -> None:
        if self.readonly or self.view is None:
            return
        self.post_message(AskEvidence(self.selected()))

    def selected(self) -> m.Hypothesis | None:
        t = self.query_one("#hyp-table", DataTable)
        if self.view is None or t.row_count == 0:
            return None
        key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
        return self.view.hypothesis(key)

    def action_edit(self) -> None:
        h = self.selected()
        if h is None or self.readonly:
            return
        self.editing = h.id
        self.editing_from = h
        for f in self.fields():
            v = getattr(h, f.field_name)
            f.value = "" if v is None else (v.value if hasattr(v, "value") else str(v))
        self.show(self.view)
        self.focus_form()

    def action_status(self) -> None:
        h = self.selected()
        if h is None or self.readonly:
            return
        self.post_message(AskHypothesisStatus(h))


TABLE_OTHER_COLUMNS = 40  # id, status, confidence, variants and the cell padding


def _text(value: Any) -> str:
    """A stored field as its form field shows it."""
    if value is None:
        return ""
    return str(value.value) if hasattr(value, "value") else str(value)


def status_text(status: m.HypothesisStatus) -> Text:
    style = {
        m.HypothesisStatus.SUPPORTED: "green",
        m.HypothesisStatus.REJECTED: "red",
        m.HypothesisStatus.WEAKENED: "yellow",
        m.HypothesisStatus.REOPENABLE: "cyan",
    }.get(status, "")
    return Text(status.value, style=style)
