"""The disposition step: decide each variant through the method's gates."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static

from session import models as m
from session.api import CHOICE_DESCRIPTIONS as CHOICE_WORDS
from session.api import (
    StatusSuggestion,
    apply_status_suggestion,
    disposition_next,
    fields_named,
    in_form,
    status_suggestion_in,
    status_update_offer,
)
from session.read_model import SessionView, disposition_form_needs, disposition_gates
from tui.display import cell, plain
from tui.screens.modals import ConfirmModal
from tui.screens.pane_messages import AskDisposition, ReloadView
from tui.screens.step_base import StepPane, clip

# The decision form's field labels, by Disposition field: a gate refusal names what is
# missing by these here, by its flag on the command line (session.gates.in_form).
FORM_LABELS = {
    "optimization_class": "the Numerical class field",
    "accepted_semantics": "the box “I accept the changed precision or semantics”",
    "guards": "the Guards field",
    "fallback": "the Fallback field",
    "reason": "the Why field",
    "reopen_when": "the Reopen when field",
}


class DispositionPane(StepPane):
    step = m.StepName.DISPOSITION
    GUIDANCE = (
        "Decide each variant. Keeping one needs a passing check, a decided round and its "
        "numerical class; a change of precision or semantics also needs your explicit "
        "acceptance and a guard. A rejected variant says what would reopen it."
    )
    _gates_of: SessionView | None = None
    _gates: dict[str, dict[m.DispositionChoice, list[str]]]

    BINDINGS = [
        Binding("d", "decide", "decide selected", id="disposition.decide"),
        Binding("u", "update_status", "update hypothesis", id="disposition.update_status"),
    ]

    def body(self) -> ComposeResult:
        yield DataTable(id="disp-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="disp-gates")

    def built(self) -> None:
        self.query_one("#disp-table", DataTable).add_columns(
            "variant", "decision", "class", "why / reopen when"
        )

    def next_hint(self, view: SessionView | None) -> str:
        return disposition_next(view, self.step_keys(decide="disposition.decide"))

    def refresh_body(self, view: SessionView | None) -> None:
        t = self.query_one("#disp-table", DataTable)
        cursor = t.cursor_row
        t.clear()
        if view is None:
            return
        for v in view.variants:
            d = view.disposition_of(v.id)
            if d is None:
                t.add_row(
                    cell(v.name, style="bold"), Text("undecided", style="yellow"), "", "", key=v.id
                )
            else:
                style = (
                    "green"
                    if d.choice.value.startswith("keep")
                    else "red"
                    if d.choice is m.DispositionChoice.REJECT
                    else "yellow"
                )
                t.add_row(
                    cell(v.name, style="bold"),
                    Text(CHOICE_WORDS[d.choice], style=style),
                    d.optimization_class.value if d.optimization_class else "—",
                    clip(d.reason or d.reopen_when, 40),
                    key=v.id,
                )
        if t.row_count:
            t.move_cursor(row=min(max(cursor, 0), t.row_count - 1))
        self.show_gates()

    def selected(self) -> m.Variant | None:
        t = self.query_one("#disp-table", DataTable)
        if self.view is None or t.row_count == 0:
            return None
        key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
        return next((v for v in self.view.variants if v.id == key), None)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_gates()

    def show_gates(self) -> None:
        box = self.query_one("#disp-gates", Static)
        v = self.selected()
        if v is None or self.view is None:
            box.update("")
            return
        gates = self.gates_for(v)
        needs = disposition_form_needs(self.view, v)
        t = Text()
        t.append(f"Choices for {plain(v.name)}\n", style="bold")
        for choice, problems in gates.items():
            if problems:
                t.append("  ✗ ", style="red")
                t.append(f"{CHOICE_WORDS[choice]:<40}", style="dim")
                words = "; ".join(in_form(p, FORM_LABELS) for p in problems)
                t.append("missing: " + plain(words, 2000) + "\n", style="red")
            else:
                t.append("  ✓ ", style="green")
                t.append(CHOICE_WORDS[choice])
                form = fields_named(needs.get(choice, []), FORM_LABELS)
                t.append("\n")
                if form:
                    t.append("      fill " + ", ".join(form) + "\n", style="dim")
        offer = self.suggestion_for(v)
        if offer is not None:
            t.append("\nThe evidence suggests: ", style="bold")
            t.append(plain(offer.text, 2000))
            update = self.own_key("disposition.update_status")
            t.append(f"\n  {status_update_offer(update)}", style="dim")
        box.update(t)

    def suggestion_for(self, v: m.Variant) -> StatusSuggestion | None:
        """The status its decision suggests for the variant's hypothesis, if it differs."""
        if self.view is None:
            return None
        d = self.view.disposition_of(v.id)
        return None if d is None else status_suggestion_in(self.view, d)  # reads nothing

    def action_update_status(self) -> None:
        """Offer the suggested status change; only a yes writes it."""
        v = self.selected()
        offer = None if v is None or self.readonly else self.suggestion_for(v)
        if offer is None:
            return

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            apply_status_suggestion(self.context.ledger, offer)
            self.notify(f"hypothesis {offer.hypothesis.id}: {offer.status.value}")
            self.post_message(ReloadView())

        self.app.push_screen(ConfirmModal(f"Update {plain(offer.text, 2000)}?"), answered)

    def gates_for(self, v: m.Variant) -> dict[m.DispositionChoice, list[str]]:
        """What each choice still lacks for this variant: the method's gates, asked once
        per view shown."""
        if self.view is None:
            return {}
        if self._gates_of is not self.view:
            self._gates_of, self._gates = self.view, {}
        if v.id not in self._gates:
            self._gates[v.id] = disposition_gates(self.context.ledger, self.view, v)
        return self._gates[v.id]

    def action_decide(self) -> None:
        v = self.selected()
        if v is None or self.readonly:
            return
        self.post_message(AskDisposition(v))

    def focus_first(self) -> None:
        self.focus_from_top(self.query_one("#disp-table", DataTable))
