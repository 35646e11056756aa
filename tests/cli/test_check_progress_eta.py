"""Issue 22 build 2: the CLI shows a check's or an audit's place ("n of m", conduct's words)
and its ETA once conduct knows one, as the app does; none is made up before."""

from __future__ import annotations

import pytest

from session.conduct import Progress
from tui.commands.run_opts import progress_display


def test_a_checks_eta_is_shown_once_known(capsys: pytest.CaptureFixture[str]) -> None:
    with progress_display("round") as show:
        show(Progress("check", "numerical check of fused (1 of 3)"))
        show(Progress("check", "audit of the baseline (2 of 3)", eta_s=12.0))
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "round: numerical check of fused (1 of 3)",
        "round: audit of the baseline (2 of 3)  ETA 12s",
    ], lines
