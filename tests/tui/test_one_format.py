"""Issue 19 item 4 and issue 21 ("every visible interval is labelled with its confidence"):
one comparison reads the same at both doors. The CLI's round table (its real console
output, in colour) and the app's results pane (run_test) show the same ratio, the same
interval under the same confidence label, the same ETA and the same colour per verdict,
all from session.format; a running round's failed check reads the same words in the
CLI's live lines as in the app's live table (session.verdicts)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample
from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from session import format as fmt
from session import models as m
from session.conduct import Progress
from session.verdicts import ci_heading, confidence_text, interval_confidence, verdict_for
from tui.commands.round_cmd import print_round
from tui.commands.run_opts import progress_display
from tui.screens.steps.results import ResultsPane
from tui.screens.steps.round import RoundPane

# an interval as any door writes it: "0.731–0.755", "[0.731, 0.755]", "0.7310–0.7550"
INTERVAL = re.compile(r"\d\.\d{2,}\s*(?:–|, )\s*\d\.\d{2,}")


def _style_of(text: Text, word: str, line_has: str) -> Style:
    """The style of `word` on the line holding `line_has` (spans combined, as drawn)."""
    plain = text.plain
    start = plain.index(line_has)
    at = plain.index(word, start)
    style = Style()
    for span in text.spans:
        if span.start <= at < span.end:
            s = span.style
            style += Style.parse(s) if isinstance(s, str) else s
    return style


def _row(text: Text, name: str) -> str:
    """The table row of variant `name` (a CLI row opens with the table's "│ ")."""
    return next(ln for ln in text.plain.splitlines() if ln.lstrip("│ ").startswith(name + " "))


def _cli_round(view, capsys, monkeypatch) -> Text:  # type: ignore[no-untyped-def]
    """`gpuopt round`'s table of the view's round, in colour, read back as styled text."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")  # a terminal, then: wide enough for whole cells
    monkeypatch.delenv("NO_COLOR", raising=False)
    rnd = view.rounds[-1]
    names = {v.id: v.name for v in view.variants}
    capsys.readouterr()
    print_round(rnd, view.comparisons[rnd.id], names, view.session, view.correctness)
    return Text.from_ansi(capsys.readouterr().out)


async def _app_text(pilot, app: PaneApp, selector: str) -> Text:  # type: ignore[no-untyped-def]
    """The Static's text once the pane has drawn it (the drawn text is the event)."""
    for _ in range(6000):  # bounds a failure only (60 s)
        content = app.pane.query_one(selector, Static).content
        if isinstance(content, Text) and content.plain:
            return content
        await pilot.pause(0.01)
    raise AssertionError(f"{selector} never drawn")


def _labelled(text: str, confidence: float) -> bool:
    """Every interval in `text` is under (or beside) its confidence's label."""
    label = f"{confidence_text(confidence)} CI"
    return not INTERVAL.search(text) or label in text


@pytest.mark.asyncio
async def test_the_cli_round_table_and_the_results_pane_read_the_same(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(ResultsPane, ledger)
    async with app.run_test(size=(160, 50)) as pilot:
        await built(pilot, app.pane)
        view = app.pane.view
        assert view is not None
        pane = await _app_text(pilot, app, "#results-table")
    # outside the app: Textual holds stdout while it runs
    cli = _cli_round(view, capsys, monkeypatch)
    rows = view.comparisons[view.rounds[-1].id]
    heading = ci_heading(rows)
    assert heading != "CI", heading  # one confidence: the heading says it
    for text in (cli, pane):
        assert heading in text.plain, text.plain
    words = set()
    for c in rows:
        name = view.variant_name(c.variant_id)
        seen = verdict_for(view, c)
        words.add(seen.word)
        for door, text in (("cli", cli), ("app", pane)):
            row = _row(text, name)
            assert fmt.ratio_text(c.ratio) in row, (door, row)
            assert fmt.ci_text(c.ci_low, c.ci_high) in row, (door, row)
            want = Style.parse(fmt.verdict_style(seen.word))
            got = _style_of(text, seen.word, name)
            same = got.color is not None and want.color is not None
            same = same and got.color.get_truecolor() == want.color.get_truecolor()
            assert same and bool(got.bold) == bool(want.bold), (door, seen.word, got, want)
    assert {"FASTER", "SAME"} <= words  # two verdicts, two colours held
    ledger.close()


def _progress(view, failed: list[str]) -> Progress:  # type: ignore[no-untyped-def]
    rnd = view.rounds[-1]
    live = [c.model_copy(update={"n": 4}) for c in view.comparisons[rnd.id]]
    return Progress(phase="round", message="measuring", block=4, max_blocks=20, runs_done=24,
                    runs_total=120, eta_s=65.0, comparisons=live, failed_checks=failed)  # fmt: skip


@pytest.mark.asyncio
async def test_a_running_round_reads_the_same_eta_ratio_and_words_in_cli_and_app(
    tmp_path: Path, capsys
) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(160, 50)) as pilot:
        await built(pilot, app.pane)
        view = app.pane.view
        assert view is not None
        broken = view.variants[0]
        p = _progress(view, [broken.id])
        app.pane.progress(p)
        await pilot.pause()
        status = (await _app_text(pilot, app, "#round-status")).plain
        live = await _app_text(pilot, app, "#round-live")
    # outside the app: Textual holds stdout and stderr while it runs
    capsys.readouterr()
    with progress_display("round", {v.id: v.name for v in view.variants}) as show:
        show(p)  # stderr is no terminal here: the CLI's log lines
    err = capsys.readouterr().err
    eta = f"ETA {fmt.eta_text(65.0)}"
    assert eta in status, status
    assert eta in err, err
    for c in p.comparisons:
        name = view.variant_name(c.variant_id)
        assert fmt.ratio_text(c.ratio) in _row(live, name), live.plain
        cli = next(part for part in err.split(", ") if name in part)
        assert fmt.ratio_text(c.ratio) in cli, err
    # the variant whose check failed in the running round: BROKEN at both doors
    seen = verdict_for(view, p.comparisons[0], p.failed_checks)
    assert seen.word == "BROKEN" and seen.failure == "check failed", seen
    assert seen.word in _row(live, broken.name), live.plain
    assert f"{broken.name}/softmax 0.742 {seen.text}" in err, err
    # the failed check's words come from the session layer, not a word of the CLI's own
    assert "check failed" not in err.replace("BROKEN (check failed)", ""), err
    assert _labelled(live.plain, interval_confidence(p.comparisons[0]))
    ledger.close()


def _review_text(view) -> str:  # type: ignore[no-untyped-def]
    """What the review screen draws for a session (its summary, as rendered)."""
    from rich.console import Console

    from tui.screens.review import session_summary

    out = Console(record=True, width=200)
    out.print(session_summary(view))
    return out.export_text()


@pytest.mark.asyncio
async def test_every_interval_shown_carries_its_confidence_even_when_rows_differ(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """Rows of two confidences (a 95% row kept from before the design's interval was
    stored, beside a 99.8% one) leave the column's heading a bare "CI": each cell then
    says its own, at both doors."""
    ledger = sample(tmp_path / "l.db")
    from sample_session import RID

    c1 = ledger.get(m.Comparison, "c1")
    c1.confidence = 0.998
    ledger.put(c1)
    app = PaneApp(ResultsPane, ledger)
    async with app.run_test(size=(160, 50)) as pilot:
        await built(pilot, app.pane)
        view = app.pane.view
        assert view is not None
        rows = view.comparisons[RID]
        assert ci_heading(rows) == "CI"
        pane = await _app_text(pilot, app, "#results-table")
    cli = _cli_round(view, capsys, monkeypatch)
    review = _review_text(view)
    for c in rows:
        name = view.variant_name(c.variant_id)
        want = fmt.ci_text(c.ci_low, c.ci_high, interval_confidence(c))
        assert want.startswith(f"{confidence_text(interval_confidence(c))} CI "), want
        for door, text in (("cli", cli), ("app", pane)):
            assert want in _row(text, name), (door, text.plain)
        # the review screen's rounds table: its rows open with the round's number
        row = next(ln for ln in review.splitlines() if f" {name} " in ln and "softmax" in ln)
        assert want in row, review
    ledger.close()


def test_no_front_end_writes_an_interval_of_its_own() -> None:
    """An interval written in tui/ or compare's text with its own f-string escapes the one
    format and its label (tui/widgets/ratio.py's "[0.731, 0.755]" and run_opts's
    "0.7310–0.7550" were two): each goes through session.format.ci_text."""
    root = Path(__file__).resolve().parents[2]
    # a ratio's interval has decimals; a range of whole figures (telemetry's "40–62" °C of
    # the cores) is no interval of a ratio
    dec = r":\.[1-9]f\}"
    own = re.compile(rf"\[\{{[^}}]*{dec}, \{{[^}}]*{dec}\]|{dec}\s*[–-]\s*\{{[^}}]*{dec}")
    files = [*sorted((root / "tui").rglob("*.py")), root / "session/conduct/compare.py"]
    found = [
        f"{path.relative_to(root)}:{i}"
        for path in files
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if own.search(line)
    ]
    assert found == [], found
