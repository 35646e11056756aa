"""The session screen's writes: the forms it opens (variant, residual, disposition,
hypothesis status, evidence) and what it saves, each through the session API, with a
conflict with an edit made elsewhere asked, never overwritten.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from session import models as m
from session.api import CHOICE_DESCRIPTIONS as CHOICE_WORDS
from session.api import (
    ENGINE_ERRORS,
    RESIDUAL_WORDS,
    SAME_TREE,
    ConflictError,
    EditConflict,
    GateRefusal,
    PreflightEdit,
    Result,
    fields_named,
    hypothesis_for_new_variant,
    hypothesis_for_ref,
    in_form,
    list_refs,
)
from session.read_model import disposition_form_needs, residual_suggestion
from tui.display import plain, shown
from tui.screens.modals import ConflictModal, FormModal
from tui.screens.session_base import SessionScreenBase
from tui.screens.steps.disposition import FORM_LABELS
from tui.widgets.evidence_form import evidence_form
from tui.widgets.file_picker import FilePicker
from tui.widgets.form import Field

REFS_NAMED = 4  # refs named in the add-variant form's note (the list holds them all)


class SessionForms(SessionScreenBase):
    """Forms and saves; each refused in review mode."""

    def save_session(
        self, session: m.Session, edited: tuple[str, ...] = ("title", "repo", "contract")
    ) -> None:
        """Write the session only over the version this screen read: an edit made
        elsewhere meanwhile (e.g. `gpuopt preflight --bottleneck`) is never undone."""

        if not self._guard():
            return
        read = self.view.session_read if self.view is not None else None
        try:
            self.api.save(session, read)
        except ConflictError as exc:
            self.show_conflict(exc, session, edited)
            return
        except Exception as exc:  # a locked or read-only file: say so, keep the form
            self.show_error("The session was not saved", str(exc))
            return
        self._saved(session)

    def show_conflict(self, exc: Any, mine: m.Session, edited: tuple[str, ...]) -> None:
        """What changed elsewhere; reload, or put the fields this form edits onto it."""
        current = exc.current
        changed = [(name, _field_text(getattr(current, name, ""))) for name in exc.changed_fields]

        def chosen(choice: str | None) -> None:
            if choice == "reload":
                self.reload()
                self.notify("Reloaded: the stored version is shown.", markup=False)
            elif choice == "merge":
                merged = m.Session.model_validate(
                    {**current.model_dump(), **{f: getattr(mine, f) for f in edited}}
                )
                self.reload(show_pane=False)  # the version the merge is written over
                self.save_session(merged, edited)

        self.app.push_screen(ConflictModal("session", changed, list(edited)), chosen)

    def _saved(self, session: m.Session) -> None:
        first = self.session_id is None
        self.session_id = session.id
        self.reload()
        self.notify(f"Session {plain(session.id)} saved.", markup=False)
        if first:
            self.goto(m.StepName.BASELINE, focus=True)

    def save_models(
        self, *items: Any, note: str = "saved", reads: dict[Any, Any] | None = None
    ) -> None:
        """Save records together; a preflight answer through the session's own door (field
        by field onto the newest stored answer: one changed elsewhere is refused)."""
        if not self._guard() or not items or self.view is None:
            return
        session = self.view.session
        answers = [i for i in items if isinstance(i, m.PreflightAnswer)]
        edits = [
            PreflightEdit(a.question, a.kind, a.text, a.evidence_id, a.concern_area)
            for a in answers
        ]
        read = {a.question: (reads or {}).get(a.question, a) for a in answers}
        try:
            if edits:
                self.api.answer_preflight(session, edits, read)
            rest = [i for i in items if not isinstance(i, m.PreflightAnswer)]
            if rest:
                self.api.put(*rest)
        except Exception as exc:
            self.show_error("Nothing was saved", str(exc))
            return
        self.reload()
        self.notify(plain(note, 1000), markup=False)

    def add_hypothesis(self, vals: dict[str, Any]) -> list[m.Hypothesis] | None:
        if not self._guard() or self.view is None:
            return None
        try:
            h, similar = self.api.add_hypothesis(self.view.session, **vals).value
        except ENGINE_ERRORS as exc:
            self.show_error("Hypothesis not saved", str(exc))
            return None
        self.reload()
        self.notify(
            f"Hypothesis {plain(h.id[:8])} saved."
            + (f" {len(similar)} similar rejected before." if similar else ""),
            markup=False,
        )
        return list(similar)

    def edit_hypothesis(self, h: m.Hypothesis, vals: dict[str, Any]) -> None:
        """Write only the fields edited in the form, onto the stored hypothesis: a field
        the command line changed meanwhile stays; one changed on both sides is asked."""
        if not self._guard():
            return
        edited = {
            k: v for k, v in vals.items() if _form_value(getattr(h, k, None)) != _form_value(v)
        }
        if not edited:
            self.notify("Nothing changed.", markup=False)
            return
        try:
            new = self.api.edit_hypothesis(h, "edited in the app", **edited).value
        except EditConflict as exc:
            stored = exc.current
            assert isinstance(stored, m.Hypothesis)

            def chosen(choice: str | None) -> None:
                if choice == "reload":
                    self.reload()
                elif choice == "merge":  # mine over theirs, read from the stored one
                    self.edit_hypothesis(stored, edited)

            changed = [(k, _field_text(getattr(stored, k))) for k in exc.changed_fields]
            self.app.push_screen(ConflictModal("hypothesis", changed, list(edited)), chosen)
            return
        except ENGINE_ERRORS as exc:
            self.show_error("Hypothesis not saved", str(exc))
            return
        self.reload()
        self.notify(f"Hypothesis {plain(new.id[:8])} updated.", markup=False)

    def ask_hypothesis_status(self, h: m.Hypothesis) -> None:
        fields = [
            Field(
                "status",
                "Status",
                h.status.value,
                choices=[(s.value, s.value) for s in m.HypothesisStatus],
            ),
            Field("why", "Why (the observation)", placeholder="what you saw"),
            Field("reopen_when", "Reopen when (needed to reject)", h.reopen_when),
        ]

        def submit(vals: dict[str, Any]) -> str:
            self.api.set_hypothesis_status(
                h,
                m.HypothesisStatus(vals["status"]),
                vals["why"],
                reopen_when=vals["reopen_when"] or None,
            )
            return vals["status"]

        self.app.push_screen(
            FormModal(f"Status of {h.title}", fields, submit),
            lambda r: self._after(r, "status updated"),
        )

    def ask_variant_patch(self) -> None:
        """A patch file picked from the repository's tree, then the add-variant form."""
        view = self.view
        if view is None or not self._guard():
            return

        def picked(path: str | None) -> None:
            if path:
                self.ask_variant(patch=path)

        self.app.push_screen(FilePicker(view.session.repo), picked)

    def ask_variant(self, patch: str = "") -> None:
        view = self.view
        if view is None or not self._guard():
            return
        hyps = [
            (shown(h.title, 40, brief=True), h.id)
            for h in view.hypotheses
            if h.status is not m.HypothesisStatus.REJECTED
        ]
        first = hypothesis_for_new_variant(view.hypotheses, view.variants)
        base = view.baseline.snapshot.commit if view.baseline is not None else None
        refs = list_refs(view.session.repo, base)  # branches and tags, as the repo has them
        fields = [
            Field(
                "ref_pick",
                "Branch or tag (arrows, or type to find; vs the baseline snapshot)",
                choices=[(shown(r.label(), 70, brief=True), r.name) for r in refs],
                allow_blank=True,
            ),
            Field("ref", "…or any other git ref or commit", placeholder="e.g. a1b2c3d"),
            Field(
                "patch",
                "…or a patch on the baseline snapshot (a file)",
                patch,
                placeholder="palette: Add a variant from a patch file",
            ),
            Field("name", "Name (no spaces; blank: the ref's name)"),
            Field(
                "hypothesis_id",
                "Hypothesis it tests",
                first.id if first is not None else "",
                choices=hyps,
                allow_blank=True,
            ),
        ]

        def submit(vals: dict[str, Any]) -> Result[m.Variant]:
            patch_file = vals["patch"].strip()
            ref = vals["ref"].strip() or vals["ref_pick"]
            if not ref and not patch_file:
                raise ValueError("choose a branch or tag, or give a git ref or a patch file")
            if ref and patch_file:
                raise ValueError("a variant comes from a ref or from a patch, not both")
            name = vals["name"].strip() or (
                ref.rsplit("/", 1)[-1] if ref else Path(patch_file).stem
            )
            how: dict[str, Any] = {"patch": patch_file} if patch_file else {"ref": ref}
            # the race-safe path: a variant not recorded leaves no snapshot ref behind
            return self.api.add_variant(
                view.session,
                name,
                hypothesis_id=vals["hypothesis_id"] or None,
                probe=bool(vals.get("probe")),
                **how,
            )

        linked = {"id": first.id if first is not None else ""}
        by_name = {r.name: r for r in refs}

        def follow_ref(form: FormModal, name: str, value: str) -> None:
            """A picked branch suggests the hypothesis it tests, until the person picks one."""
            ref = by_name.get(value) if name == "ref_pick" else None
            field = form.field("hypothesis_id")
            if ref is None or field.value != linked["id"]:
                return
            h = hypothesis_for_ref(view.hypotheses, view.variants, f"{ref.name} {ref.subject}")
            if h is not None and any(h.id == hid for _, hid in hyps):
                field.value = linked["id"] = h.id

        note = "" if hyps else "No hypothesis yet: a variant without one cannot be kept.\n"
        # the refs named on screen, not only behind the list's arrow
        shown_refs = [r for r in refs if r.kind == "branch" and r.stat != SAME_TREE] or refs
        if shown_refs:
            note += "In this repository: " + "; ".join(
                plain(r.label(), 90) for r in shown_refs[:REFS_NAMED]
            )
            if len(shown_refs) > REFS_NAMED:
                note += f"; and {len(shown_refs) - REFS_NAMED} more in the list"
        else:
            note += "No branch or tag found: give a commit below."
        self.app.push_screen(
            FormModal(
                "Add a variant",
                fields,
                submit,
                checkboxes=[("probe", "probe (observes, changes nothing)", False)],
                note=note,
                on_choice=follow_ref,
            ),
            self._variant_added,
        )

    def ask_residual(self) -> None:
        view = self.view
        if view is None or not self._guard():
            return
        pending = [v for v in view.variants if view.residual_of(v.id) is None] or view.variants
        first = pending[0]
        found = residual_suggestion(self.ledger, view, first)
        sug = found[0] if found else None
        fields = [
            Field(
                "variant",
                "Variant",
                first.id,
                choices=[(shown(v.name, 40, brief=True), v.id) for v in view.variants],
            ),
            Field(
                "residual",
                "How the outcome differs from the prediction",
                sug.value if sug else "",
                choices=[(residual_choice(c), c.value) for c in m.ResidualClass],
            ),
            Field("note", "Note", placeholder="what you read in the results"),
        ]

        def submit(vals: dict[str, Any]) -> m.Residual:
            if not vals["residual"]:
                raise ValueError("choose a residual class")
            v = next(x for x in view.variants if x.id == vals["variant"])
            return self.api.confirm_residual(
                view, v, m.ResidualClass(vals["residual"]), vals["note"]
            ).value

        self.app.push_screen(
            FormModal("Confirm the residual", fields, submit),
            lambda r: self._after(r, "residual confirmed"),
        )

    def ask_disposition(self, v: m.Variant) -> None:
        view = self.view
        if view is None or not self._guard():
            return
        checks = view.correctness_of(v.id)
        sug_class = next((c.suggested_class.value for c in checks if c.suggested_class), "")
        open_choices = [c for c, p in self.gates_for(v).items() if not p]
        default = (open_choices[0] if open_choices else m.DispositionChoice.NEED_EVIDENCE).value
        fields = [
            Field(
                "choice",
                "Decision",
                default,
                choices=[(CHOICE_WORDS[c], c.value) for c in m.DispositionChoice],
            ),
            Field(
                "optimization_class",
                "Numerical class",
                sug_class,
                choices=[(c.value, c.value) for c in m.OptimizationClass],
                allow_blank=True,
            ),
            Field("guards", "Guards or flags (comma separated)"),
            Field("fallback", "Fallback"),
            Field("failure_cases", "Known failure cases (comma separated)"),
            Field("remaining_bottlenecks", "Remaining bottlenecks (comma separated)"),
            Field("reason", "Why"),
            Field("reopen_when", "Reopen when"),
        ]

        def split(s: str) -> list[str]:
            return [x.strip() for x in s.split(",") if x.strip()]

        def submit(vals: dict[str, Any]) -> m.Disposition:
            kw: dict[str, Any] = {
                "optimization_class": m.OptimizationClass(vals["optimization_class"])
                if vals["optimization_class"]
                else None,
                "accepted_semantics": bool(vals.get("accepted_semantics")),
                "guards": split(vals["guards"]),
                "fallback": vals["fallback"],
                "failure_cases": split(vals["failure_cases"]),
                "remaining_bottlenecks": split(vals["remaining_bottlenecks"]),
                "reason": vals["reason"],
                "reopen_when": vals["reopen_when"],
            }
            try:
                return self.api.decide(
                    view.session, v, m.DispositionChoice(vals["choice"]), **kw
                ).value
            except GateRefusal as exc:  # the gate's words, naming this form's fields
                raise GateRefusal([in_form(r, FORM_LABELS) for r in exc.reasons]) from None

        gates = self.gates_for(v)
        needs = disposition_form_needs(view, v)

        def state(c: m.DispositionChoice, p: list[str]) -> str:
            if p:
                return "; ".join(in_form(r, FORM_LABELS) for r in p)
            form = fields_named(needs.get(c, []), FORM_LABELS)
            return "open" + ("; fill " + ", ".join(form) if form else "")

        note = "\n".join(
            f"{'✓' if not p else '✗'} {CHOICE_WORDS[c]}: {state(c, p)}" for c, p in gates.items()
        )
        self.app.push_screen(
            FormModal(
                f"Decide {v.name}",
                fields,
                submit,
                checkboxes=[
                    (
                        "accepted_semantics",
                        "I accept the changed precision or semantics (C3/C4)",
                        False,
                    )
                ],
                note=note[:800],
            ),
            lambda r: self._after(r, f"decision recorded for {v.name}"),
        )

    def _variant_added(self, result: Result[m.Variant] | None) -> None:
        """The variant's warnings (the CLI's own, from the session layer), then the note."""
        if result is None:
            return
        self._after(result, f"variant {result.value.name} added")
        for w in result.warnings:
            self.notify(
                plain(w.words(), 1000),
                title=w.severity,
                severity="warning" if w.severity == "warning" else "information",
                markup=False,
                timeout=12,
            )

    def _after(self, result: Any, note: str) -> None:
        if result is None:
            return
        self.reload()
        self.notify(plain(note, 1000), markup=False)

    def ask_evidence(self, hypothesis: m.Hypothesis | None) -> None:
        view = self.view
        if view is None or not self._guard():
            return
        title, fields, submit, note = evidence_form(self.ledger, view, hypothesis)
        self.app.push_screen(
            FormModal(title, fields, submit, note=note),
            lambda r: self._after(r, "evidence added"),
        )


def residual_choice(c: m.ResidualClass) -> str:
    """A residual class and its words, shortened at a word (never mid-word) to fit a form."""
    return textwrap.shorten(f"{c.value}: {RESIDUAL_WORDS[c]}", 70, placeholder="…")


def _form_value(value: Any) -> Any:
    """A model's field as a form field holds it (enums by value, None as empty)."""
    if value is None:
        return ""
    return value.value if hasattr(value, "value") else value


def _field_text(value: Any) -> str:
    """A stored field's value in one line, for a conflict notice."""
    if hasattr(value, "model_dump_json"):
        return str(value.model_dump_json())
    return str(getattr(value, "value", value))
