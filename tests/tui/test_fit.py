"""What the screens say fits and is right (issue 15, visible bugs and item 6): aligned
round/results columns at every width from 80 up, ellipsis before a column is lost, wrapped
notes that keep their indent, neutral rail glyphs, the right step key in a hint, a label
that does not repeat its value, one baseline counter with an ETA."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import sample

from measure.schedule import pace_eta_s
from session import models as m
from session.read_model import SessionView, load_view
from tui.screens.steps.baseline import baseline_table
from tui.screens.steps.round import comparison_table, fit_columns, indented
from tui.widgets.rail import GLYPH
from tui.widgets.words import count


def _rows(view: SessionView, width: int) -> list[str]:
    rnd = view.rounds[-1]
    table = comparison_table(view, rnd, view.comparisons[rnd.id], width=width)
    return table.plain.split("\n")


@pytest.mark.parametrize("width", [58, 70, 100, 140])
def test_the_verdict_sits_under_its_header_at_every_width(tmp_path: Path, width: int) -> None:
    ledger = sample(tmp_path / "l.db")
    view = load_view(ledger, ledger.session_rows()[0]["id"])
    lines = _rows(view, width)
    header = next(ln for ln in lines if ln.startswith("variant"))
    col = header.index("verdict")
    for word in ("FASTER", "SAME", "BROKEN", "INCONCLUSIVE", "SLOWER"):
        for ln in lines:
            if f" {word}" in ln and not ln.startswith(" "):
                assert ln.index(word) == col, (width, ln)
    for name in ("95% CI", "ratio"):
        assert name in header
    ledger.close()


def test_long_names_are_shortened_with_an_ellipsis_not_dropped() -> None:
    name_w, wl_w = fit_columns(58, 40, 30)
    assert name_w >= len("variant") and wl_w >= len("workload")
    assert name_w + wl_w + 6 + 16 + 12 + 8 <= 58 + 6  # the row fits, the verdict included


def test_a_wrapped_note_keeps_its_indent() -> None:
    text = indented("word " * 40, 9, 60, "dim").plain.rstrip("\n").split("\n")
    assert len(text) > 1
    assert all(line.startswith(" " * 11) for line in text[1:])
    assert text[0].startswith(" " * 9 + "↳ ")


def test_steps_not_reached_are_neutral_not_red() -> None:
    for state in (m.StepState.BLOCKED, m.StepState.NOT_STARTED):
        glyph, style = GLYPH[state]
        assert "red" not in style and glyph != "✗"


def test_the_contract_hint_names_the_baselines_own_key() -> None:
    """The rule is the session layer's (session.next_steps); the app's keys, as remapped,
    are test_keymap's."""
    from session.next_steps import StepKeys, contract_next

    view = type("V", (), {"baseline": None})()
    hint = contract_next(view, StepKeys())  # type: ignore[arg-type]
    assert "press 2 or n" in hint


def test_the_baseline_label_does_not_repeat_its_value(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    view = load_view(ledger, ledger.session_rows()[0]["id"])
    from rich.console import Console

    console = Console(width=120, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(baseline_table(view))
    out = console.export_text()
    assert "reproducible reproducible" not in out and "A/A check" in out
    ledger.close()


def test_counts_say_their_noun_in_the_right_number() -> None:
    assert count(1, "answer") == "1 answer"
    assert count(3, "answer") == "3 answers"
    assert count(2, "hypothesis", "hypotheses") == "2 hypotheses"


def test_the_baseline_eta_comes_from_its_pace() -> None:
    assert pace_eta_s(8.0, 4, 24) == pytest.approx(40.0)
    assert pace_eta_s(0.0, 0, 24) is None  # nothing to go by yet
    assert pace_eta_s(8.0, 24, 24) == 0


def test_residual_choices_are_shortened_at_a_word() -> None:
    from session.residuals import SHORT
    from tui.screens.session import residual_choice

    for c in m.ResidualClass:
        text = residual_choice(c)
        whole = f"{c.value}: {SHORT[c]}"
        assert text == whole or (text.endswith("…") and whole.startswith(text[:-1].rstrip()))
        assert len(text) <= 70


def test_a_wrapped_detail_line_keeps_its_indent() -> None:
    from rich.console import Console
    from rich.text import Text

    from tui.screens.steps.results import hang

    console = Console(width=40, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(hang(Text("    out: max abs 8.34e-07  max rel 9.67e-07  ulp max 15  worst")))
    lines = [ln for ln in console.export_text().split("\n") if ln.strip()]
    assert len(lines) > 1 and all(ln.startswith("    ") for ln in lines)


def test_a_telemetry_sample_after_the_last_screen_is_ignored(tmp_path: Path) -> None:
    """A sample that reaches the app while it closes (no screen left) is dropped, not a
    crash on the way out."""
    from tui.app import GpuoptApp

    app = GpuoptApp(tmp_path / "l.db", telemetry="off")
    assert list(app._panels()) == []
