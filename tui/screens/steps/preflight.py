"""The preflight step: the method's six questions, each answered, handed off or marked."""

from __future__ import annotations

from pydantic import ValidationError
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from session import models as m
from session.api import (
    BOTTLENECKS,
    CHECKLIST,
    CONCERN_LABELS,
    KIND_LABELS,
    NO_SESSION,
    NOTHING_TO_SAVE,
    QUESTIONS,
    PreflightView,
    Session,
    StepKeys,
    bottleneck_key_words,
    checklist_key_words,
    preflight_next,
)
from session.api import describe_evidence as describe
from session.read_model import SessionView
from tui.display import plain, shown
from tui.screens.modals import ConflictModal, FormModal
from tui.screens.pane_messages import ReloadView, SaveModels
from tui.screens.step_base import StepPane
from tui.widgets.form import Field, clear_errors
from tui.widgets.words import count

KIND_CHOICES = [(label, kind.value) for kind, label in KIND_LABELS.items()]
AREA_CHOICES = [(label, area.value) for area, label in CONCERN_LABELS.items()]


class PreflightPane(StepPane):
    step = m.StepName.PREFLIGHT
    GUIDANCE = (
        "Six questions about the memory and the schedule the change will touch. Answer from "
        "a measurement, hand one to the area that owns it, or say why it does not apply. "
        "An honest 'unknown' is allowed, and it shows in the record."
    )
    BINDINGS = [
        Binding(
            "ctrl+s,f2", "save", "save", tooltip="Save the preflight answers", id="preflight.save"
        ),
        Binding(
            "b",
            "bottleneck",
            "bottleneck",
            tooltip="Set the bottleneck class, with what shows it",
            id="preflight.bottleneck",
        ),
        Binding(
            "k",
            "checklist",
            "checklist",
            tooltip="Tick the preflight checklist (fourteen items)",
            id="preflight.checklist",
        ),
    ]
    WRITES = StepPane.WRITES | {"bottleneck", "checklist"}

    def body(self) -> ComposeResult:
        yield Static("", id="preflight-summary")
        for q, text in QUESTIONS.items():
            with Vertical(classes="question", id=f"q-{q.value}"):
                # a Static wraps at word breaks in the pane's width: never cut mid-word
                yield Static(Text.assemble((q.value, "bold"), "  ", text), classes="question-text")
                with Horizontal(classes="row"):
                    yield Field(f"{q.value}.kind", "answer", "unknown", choices=KIND_CHOICES)
                    yield Field(
                        f"{q.value}.concern_area", "goes to", choices=AREA_CHOICES, allow_blank=True
                    )
                with Horizontal(classes="row"):
                    yield Field(
                        f"{q.value}.text",
                        "what you know",
                        placeholder="measurement, evidence or reason",
                    )
                    yield Field(f"{q.value}.evidence_id", "evidence", choices=[], allow_blank=True)

    def help_text(self) -> Text:
        """The guidance and each question whole (the session layer's words)."""
        t = Text(self.GUIDANCE + "\n")
        for q, text in QUESTIONS.items():
            t.append(f"\n{q.value}", style="bold")
            t.append(f"  {text}")
        return t

    def next_hint(self, view: SessionView | None) -> str:
        if view is None:
            return NO_SESSION
        keys = self.step_keys(
            save="preflight.save",
            bottleneck="preflight.bottleneck",
            checklist="preflight.checklist",
        )
        return preflight_next(len(view.preflight), len(QUESTIONS), keys)

    filled: dict[m.PreflightQuestion, tuple[str, str, str]]

    def refresh_body(self, view: SessionView | None) -> None:
        if view is None:
            return
        ledger = self.context.ledger
        api = Session(ledger, view.session.id) if ledger is not None else None
        pv = api.preflight(view.session) if api is not None else None
        keys = self.step_keys(bottleneck="preflight.bottleneck", checklist="preflight.checklist")
        self.query_one("#preflight-summary", Static).update(summary_text(pv, keys))
        evidence = (
            [(shown(describe(e), 60, brief=True), e.id) for e in api.evidence()]
            if api is not None
            else []
        )
        for question in QUESTIONS:
            self.query_one(f"#field-{question.value}-evidence_id", Field).set_choices(evidence)
        # what the form shows now: a save writes only the questions edited since
        self.filled = {a.question: _answer_key(a) for a in view.preflight}
        for a in view.preflight:
            q = a.question.value
            self.query_one(f"#field-{q}-kind", Field).value = a.kind.value
            area = a.concern_area.value if a.concern_area is not None else ""
            self.query_one(f"#field-{q}-concern_area", Field).value = area
            self.query_one(f"#field-{q}-text", Field).value = a.text
            self.query_one(f"#field-{q}-evidence_id", Field).value = a.evidence_id or ""
        for f in self.query(Field):
            f.disabled = self.readonly

    def action_save(self) -> None:
        view = self.view
        if view is None or self.readonly:
            return
        answers: list[m.PreflightAnswer] = []
        bad = False
        for q in QUESTIONS:
            fields = {
                f.field_name.split(".", 1)[1]: f
                for f in self.query(Field)
                if f.field_name.startswith(q.value + ".")
            }
            clear_errors(fields.values())
            kind = fields["kind"].value or "unknown"
            text = fields["text"].value
            area = fields["concern_area"].value or None
            evidence_id = fields["evidence_id"].value or None
            existing = next((a for a in view.preflight if a.question is q), None)
            if kind == "unknown" and not text.strip() and existing is None:
                continue
            shown_before = getattr(self, "filled", {}).get(q, ("unknown", "", ""))
            if (kind, area or "", text) == shown_before and evidence_id == (
                existing.evidence_id if existing else None
            ):
                continue  # not edited here: whatever is stored (maybe newer) stays
            try:
                answers.append(
                    m.PreflightAnswer(
                        session_id=view.session.id,
                        question=q,
                        kind=m.PreflightAnswerKind(kind),
                        text=text,
                        concern_area=m.ConcernArea(area) if area else None,
                        evidence_id=evidence_id,
                    )
                )
            except ValidationError as exc:
                bad = True
                msgs = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
                target = "concern_area" if "concern area" in msgs else "text"
                fields[target].set_error(msgs)
        if bad:
            return
        if not answers:
            self.notify(NOTHING_TO_SAVE, markup=False)
            return
        stored_answers = Session(self.context.ledger, view.session.id).preflight_answers()
        stored = {q: _answer_key(a) for q, a in stored_answers.items()}
        shown_answers = {a.question: a for a in view.preflight}
        reads = {a.question: shown_answers.get(a.question, a) for a in answers}
        filled = getattr(self, "filled", {})
        clash = [
            a.question
            for a in answers
            if stored.get(a.question, ("unknown", "", ""))
            != filled.get(a.question, ("unknown", "", ""))
        ]
        if clash:  # answered elsewhere meanwhile, and edited here too: ask

            def chosen(choice: str | None) -> None:
                if choice == "reload":
                    self.post_message(ReloadView())
                elif choice == "merge":  # mine onto the stored ones
                    onto = {a.question: stored_answers.get(a.question, a) for a in answers}
                    self.post_message(
                        SaveModels(
                            *answers, note=f"saved {count(len(answers), 'answer')}", reads=onto
                        )
                    )

            changed = [(q.value, " · ".join(x for x in stored.get(q, ()) if x)) for q in clash]
            self.app.push_screen(
                ConflictModal("preflight", changed, [a.question.value for a in answers]), chosen
            )
            return
        self.post_message(
            SaveModels(*answers, note=f"saved {count(len(answers), 'answer')}", reads=reads)
        )

    def action_bottleneck(self) -> None:
        view, ledger = self.view, self.context.ledger
        if view is None or ledger is None or self.readonly:
            return
        api = Session(ledger, view.session.id)
        fresh = api.stored() or view.session
        fields = [
            Field(
                "bottleneck",
                "Bottleneck class",
                fresh.bottleneck.value,
                choices=[(f"{c.value}: {w}", c.value) for c, w in BOTTLENECKS.items()],
            ),
            Field(
                "evidence",
                "What shows it (a measurement, a profile, an evidence id)",
                fresh.bottleneck_evidence,
            ),
        ]

        def submit(vals: dict[str, str]) -> m.Session:
            return api.set_bottleneck(view.session, vals["bottleneck"], vals["evidence"]).value

        self.app.push_screen(
            FormModal("The bottleneck", fields, submit), lambda r: self._saved(r, "bottleneck set")
        )

    def action_checklist(self) -> None:
        view, ledger = self.view, self.context.ledger
        if view is None or ledger is None or self.readonly:
            return
        api = Session(ledger, view.session.id)
        items = {c.number: c for c in api.checklist(view.session)}
        boxes = [(f"item{n}", f"{n:>2}. {text}", items[n].done) for n, text in CHECKLIST.items()]

        def submit(vals: dict[str, object]) -> int:
            changed = 0
            for n in CHECKLIST:
                done = bool(vals.get(f"item{n}"))
                if done != items[n].done:
                    api.set_checklist(view.session, n, done)
                    changed += 1
            return changed

        self.app.push_screen(
            FormModal("The preflight checklist", [], submit, checkboxes=boxes),
            lambda r: self._saved(r, f"checklist: {count(int(r or 0), 'item')} changed"),
        )

    def _saved(self, result: object, note: str) -> None:
        if result is None:
            return
        self.post_message(ReloadView())
        self.notify(note, markup=False)


def _answer_key(a: m.PreflightAnswer) -> tuple[str, str, str]:
    """An answer as the form holds it: kind, concern area, text."""
    return (a.kind.value, a.concern_area.value if a.concern_area else "", a.text)


def summary_text(pv: PreflightView | None, keys: StepKeys) -> Text:
    """The bottleneck class and the checklist's count, with the keys that set them."""
    t = Text()
    if pv is None:
        return t
    t.append("bottleneck ", style="dim")
    t.append(pv.bottleneck.value, style="bold")
    if pv.bottleneck_evidence:
        t.append(f"  {plain(pv.bottleneck_evidence, 200)}", style="dim")
    t.append(f"  {bottleneck_key_words(keys)}\n", style="dim")
    done = sum(1 for c in pv.checklist if c.done)
    t.append("checklist ", style="dim")
    t.append(f"{done} of {len(pv.checklist)} done", style="bold")
    t.append(f"  {checklist_key_words(keys)}", style="dim")
    return t
