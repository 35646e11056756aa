"""Review mode: every session of a ledger, their rounds and variants, the rejected ideas.

Reading only: nothing here writes the ledger or runs a command stored in it.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static, TabbedContent, TabPane

from session import models as m
from session.api import CHOICE_DESCRIPTIONS as CHOICE_WORDS
from session.api import (
    LedgerError,
    SessionExport,
    baseline_words,  # the one wording of a baseline's outcome
    bisections,
    default_export_dir,
    error_tail,
    export_record,
    export_written_words,
    metric_legend,
    ratio_text,
    unreadable,
    verdict_style,
)
from session.api import gather_record as gather
from session.read_model import (
    SessionView,
    check_sessions,
    kept_per_session,
    load_view,
    rejected_hypotheses,
    session_rows,
    stored_session,
)
from session.verdicts import ci_cell, ci_heading, verdict_for
from tui.display import LIMIT, cell, home_short, plain, shown
from tui.screens.session import SessionScreen
from tui.widgets.bisections import bisections_view
from tui.widgets.footer import SteadyFooter

SORT_KEYS = ("created_at", "title", "repo", "rounds", "variants")


class ReviewScreen(Screen[None]):
    BINDINGS = [
        Binding("enter", "open", "open session", id="review.open"),
        Binding("slash", "filter", "filter", id="review.filter"),
        Binding("o", "sort", "sort", id="review.sort"),
        Binding("x", "export", "export record", id="review.export"),
        Binding("h", "tab('rejected')", "rejected ideas", id="review.tab_rejected"),
        Binding("s", "tab('sessions')", "sessions", id="review.tab_sessions"),
        Binding("b", "tab('bisections')", "bisections", id="review.tab_bisections"),
        Binding("escape", "back", "back", show=False, id="review.back"),
    ]

    sort_index = 0
    sort_reverse = True

    def compose(self) -> ComposeResult:
        yield Static("", id="title-bar")
        with TabbedContent(id="review-tabs", initial="sessions"):
            with TabPane("Sessions", id="sessions"):
                yield Input(
                    placeholder="filter: words in title, repository, machine or id (press / )",
                    id="review-filter",
                )
                yield Static("", id="review-sort")
                yield Static("", id="review-unreadable")
                yield DataTable(id="review-sessions", cursor_type="row", zebra_stripes=True)
                with Vertical(id="review-detail-box"):
                    yield Static("", id="review-detail")
            if self.bisections:  # a tab only where there are bisections
                with TabPane("Bisections", id="bisections"), VerticalScroll(id="review-bis-box"):
                    yield Static(bisections_view(self.bisections), id="review-bisections")
            with TabPane("Rejected hypotheses", id="rejected"):
                yield Static(
                    "Ideas tried and rejected, in every session of this ledger: "
                    "read them before repeating one.",
                    classes="guidance",
                )
                yield DataTable(id="review-rejected", cursor_type="row", zebra_stripes=True)
        yield SteadyFooter()

    @property
    def ledger(self) -> Any:
        return self.app.ledger  # type: ignore[attr-defined]

    @property
    def bisections(self) -> list[Any]:
        if not hasattr(self, "_bisections"):
            self._bisections = bisections(self.ledger)
        return self._bisections

    def on_mount(self) -> None:
        led = self.ledger
        mode = "read-only" if led.readonly else "review"
        self.query_one("#title-bar", Static).update(
            Text.assemble(
                (" gpuopt review", "bold"),
                f" · {plain(home_short(led.path))}",
                (f" · {mode}", "yellow"),
            )
        )
        self.query_one("#review-sessions", DataTable).add_columns(
            "id", "title", "repository", "machine", "created", "var", "rounds", "kept"
        )
        self.query_one("#review-rejected", DataTable).add_columns(
            "session", "hypothesis", "mechanism", "reopen when"
        )
        self.load()
        self.query_one("#review-sessions", DataTable).focus()

    def load(self) -> None:
        led = self.ledger
        self.rows = session_rows(led)
        kept = kept_per_session(led)
        for r in self.rows:
            r["kept"] = kept.get(r["id"], 0)
        check_sessions(led)  # validates each session row: a bad one is named, not fatal
        self.fill_sessions()
        titles = {r["id"]: r["title"] for r in self.rows}
        t = self.query_one("#review-rejected", DataTable)
        t.clear()
        for h in rejected_hypotheses(led):
            t.add_row(  # a foreign ledger's text: shown literally, never read as markup
                cell(titles.get(h.session_id, h.session_id)[:24]),
                cell(h.title),
                cell(h.mechanism[:60]),
                cell(h.reopen_when[:40]),
                key=h.id,
            )

    def fill_sessions(self) -> None:
        t = self.query_one("#review-sessions", DataTable)
        t.clear()
        words = self.query_one("#review-filter", Input).value.lower().split()
        key = SORT_KEYS[self.sort_index]
        rows = [
            r
            for r in self.rows
            if all(
                w in f"{r['id']} {r['title']} {r['repo']} {r.get('machines') or ''}".lower()
                for w in words
            )
        ]
        rows.sort(key=lambda r: r[key], reverse=self.sort_reverse)
        for r in rows:
            t.add_row(
                cell(r["id"][:8]),
                cell(r["title"], length=r.get("title_length")),
                cell(r["repo"].rstrip("/").rsplit("/", 1)[-1], 60),
                cell(r.get("machines") or "—", 40),
                cell(str(r["created_at"])[:10]),
                str(r["variants"]),
                str(r["rounds"]),
                str(r["kept"]),
                key=r["id"],
            )
        order = (
            "newest first"
            if key == "created_at" and self.sort_reverse
            else (
                "oldest first"
                if key == "created_at"
                else ("descending" if self.sort_reverse else "ascending")
            )
        )
        self.query_one("#review-sort", Static).update(
            f"{len(rows)} of {len(self.rows)} sessions · "
            f"sorted by {key.replace('_at', '')}, {order} (o changes it)"
        )
        self.show_detail()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.fill_sessions()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one("#review-sessions", DataTable).focus()

    def selected_id(self) -> str | None:
        t = self.query_one("#review-sessions", DataTable)
        if t.row_count == 0:
            return None
        return str(t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "review-sessions":
            self.show_detail()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "review-sessions":
            self.action_open()

    def show_detail(self) -> None:
        box = self.query_one("#review-detail", Static)
        sid = self.selected_id()
        if sid is None:
            box.update(
                Text(
                    "No sessions match." if self.rows else "This ledger holds no sessions.",
                    style="dim",
                )
            )
            return
        try:
            view = load_view(self.ledger, sid)
        except LedgerError as exc:  # its own row does not read back: say which, go on
            box.update(Text(plain(exc, 1000), style="yellow"))
        else:
            box.update(session_summary(view, self.record_of(view)))
        self.show_unreadable()

    def record_of(self, view: SessionView) -> SessionExport | None:
        """The record model of a session (the verdicts a reviewer sees); None, said in the
        list's own words, when it cannot be gathered."""
        try:
            return gather(self.ledger, view.session, view)
        except (LedgerError, LookupError, ValueError):
            return None

    def show_unreadable(self) -> None:
        """Every row met so far that does not read back, by table and rowid."""
        rows = unreadable(self.ledger)
        box = self.query_one("#review-unreadable", Static)
        box.display = bool(rows)
        if rows:
            box.update(
                Text(
                    "\n".join(plain(r, 1000) for r in rows)
                    + "\n(left out; everything else is shown)",
                    style="yellow",
                )
            )

    def action_open(self) -> None:
        sid = self.selected_id()
        if sid is None:
            return
        try:
            load_view(self.ledger, sid)
        except LedgerError as exc:
            self.notify(plain(exc, 1000), severity="warning", markup=False)
            return
        self.app.push_screen(SessionScreen(sid, readonly=True))

    def action_filter(self) -> None:
        self.query_one("#review-tabs", TabbedContent).active = "sessions"
        self.query_one("#review-filter", Input).focus()

    def action_sort(self) -> None:
        if self.sort_reverse:
            self.sort_reverse = False
        else:
            self.sort_index = (self.sort_index + 1) % len(SORT_KEYS)
            self.sort_reverse = True
        self.fill_sessions()
        self.notify(f"sorted by {SORT_KEYS[self.sort_index]}", timeout=2)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # No bisections, no such tab: its key is not offered.
        return not (action == "tab" and parameters == ("bisections",) and not self.bisections)

    def action_tab(self, tab: str) -> None:
        self.query_one("#review-tabs", TabbedContent).active = tab
        if tab == "bisections":
            self.query_one("#review-bis-box").focus()
            return
        self.query_one(
            f"#review-{'sessions' if tab == 'sessions' else 'rejected'}", DataTable
        ).focus()

    def action_export(self) -> None:
        sid = self.selected_id()
        if sid is None:
            return
        try:
            session = stored_session(self.ledger, sid)
        except LedgerError as exc:
            self.notify(plain(exc, 1000), severity="warning", markup=False)
            return
        if session is None:
            self.notify(f"No session {plain(sid, 40)} any more.", severity="warning", markup=False)
            return
        target = getattr(self.app, "export_dir", None) or default_export_dir()
        try:
            path = export_record(self.ledger, session, target)
        except OSError as exc:
            self.notify(f"Export failed: {plain(exc, 1000)}", severity="error", markup=False)
            return
        self.app.exported = str(path)  # type: ignore[attr-defined]
        self.notify(
            plain(export_written_words(path), None, multiline=True), timeout=8, markup=False
        )

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()


def failure_lines(view: SessionView) -> list[Text]:
    """Each FAILED/BROKEN comparison in words: the verdict, its note, its exception's end."""
    out: list[Text] = []
    for r in view.rounds:
        for c in view.comparisons.get(r.id, []):
            if c.verdict not in (m.Verdict.FAILED, m.Verdict.BROKEN):
                continue
            head = Text.assemble(
                (c.verdict.value, "bold red"),
                f" round {r.number} ",
                shown(view.variant_name(c.variant_id)),
                "/",
                shown(c.workload),
            )
            if c.note:
                head.append(": ")
                head.append(shown(c.note, 500))
            out.append(head)
            for line in error_tail(c.error, 4).splitlines():
                out.append(Text("    " + plain(line, 300), style="dim"))
    return out


def session_summary(view: SessionView, record: SessionExport | None = None) -> Group:
    """The session in the review list. Its verdicts are the record's (`record`, gathered
    from the ledger by the screen), else the same rule applied to the view."""
    s = view.session
    head = Text()
    head.append(shown(s.title, style="bold"))
    head.append(
        f"  {plain(s.id)} · {plain(s.repo)} · {plain(metric_legend(s.contract), 500)}, "
        f"{s.contract.metric.direction.value} is better",
        style="dim",
    )
    parts: list[Any] = [head]
    b = view.baseline
    if b is not None:
        parts.append(
            Text(
                f"baseline {plain(b.id[:8])} · "
                f"{baseline_words(b, s.contract.threshold)} · "
                + plain(", ".join(f"{k}={v:.4g}" for k, v in b.reference.items()), LIMIT * 4),
                style="dim",
            )
        )
    rounds = Table(box=None, padding=(0, 1), header_style="bold", show_edge=False)
    heading = ci_heading(c for r in view.rounds for c in view.comparisons.get(r.id, []))
    for col in ("round", "variant", "workload", "ratio", heading, "verdict", "decision"):
        rounds.add_column(col, no_wrap=True)
    # (round, variant, workload) -> (verdict, failure, trusted), as the record says them
    said = {
        (r.id, c.variant_id, c.workload): (c.verdict, c.failure, c.trusted)
        for r in (record.rounds if record else [])
        for c in r.comparisons
    }
    # a decision shows on the round it rests on, not on the rounds before it
    rests = {x.variant_id: x.round for x in (record.dispositions if record else [])}
    for r in view.rounds:
        for c in view.comparisons.get(r.id, []):
            rests.setdefault(c.variant_id, None)
            if record is None:
                rests[c.variant_id] = r.number
    for r in view.rounds:
        for c in view.comparisons.get(r.id, []):
            d = view.disposition_of(c.variant_id) if rests.get(c.variant_id) == r.number else None
            key = (r.id, c.variant_id, c.workload)
            if key not in said:  # no record: the same rule, on the view
                v = verdict_for(view, c)
                said[key] = (v.word, v.failure, v.trusted)
            rounds.add_row(
                str(r.number)
                if r.status is m.RoundStatus.COMPLETED
                else f"{r.number} {r.status.value}",
                shown(view.variant_name(c.variant_id)),
                shown(c.workload),
                ratio_text(c.ratio),
                ci_cell(c, heading),
                shown_verdict_text(*said[key]),
                CHOICE_WORDS[d.choice] if d else "—",
            )
    if view.rounds:
        parts.append(rounds)
        parts.extend(failure_lines(view))
    else:
        parts.append(Text("no rounds", style="dim"))
    untested = [
        v.name for v in view.variants if not any(v.id in r.variant_ids for r in view.rounds)
    ]
    if untested:
        parts.append(
            Text("variants not yet measured: " + ", ".join(plain(u) for u in untested), style="dim")
        )
    return Group(*parts)


def shown_verdict_text(word: str, failure: str, trusted: bool) -> Text:
    """The verdict a reviewer sees: BROKEN with its failure, the untrusted mark."""
    out = Text(word, style=verdict_style(word))
    if failure:
        out.append(f" {plain(failure, 60)}", style="magenta")
    if not trusted:
        out.append(" untrusted", style="yellow")
    return out
