"""The contract form's environment box: NAME=KEY=VALUE lines set a workload's env (the
command line's `new --env`); a bad line is shown under the box and nothing is saved."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample
from textual.widgets import Static, TextArea

from session import models as m
from tui.screens.pane_messages import SaveSession
from tui.screens.steps.contract import ContractPane
from tui.widgets.form import Field


@pytest.mark.asyncio
async def test_env_lines_reach_the_saved_workloads(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = make_repo()
    ledger = sample(tmp_path / "l.db", m.StepName.CONTRACT)
    app = PaneApp(ContractPane, ledger)
    async with app.run_test(size=(120, 50)) as pilot:
        await built(pilot, app.pane)
        app.pane.query_one("#field-repo", Field).value = str(repo)
        assert app.pane.view is not None
        names = [w.name for w in app.pane.view.session.contract.workloads]
        env = app.pane.query_one("#env-text", TextArea)
        env.text = "nosuch=A=1"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.holder.got == []
        error = str(app.pane.query_one("#env-error", Static).render())
        assert "no workload 'nosuch'" in error
        env.text = f"{names[0]}=MALLOC_TRIM_THRESHOLD_=68719476736\n{names[0]}=B=x=y\n"
        await pilot.press("ctrl+s")
        await pilot.pause()
        got = app.holder.got
        assert [type(x) for x in got] == [SaveSession]
        assert isinstance(got[0], SaveSession)
        saved = got[0].session.contract.workloads[0]
        assert saved.env == {"MALLOC_TRIM_THRESHOLD_": "68719476736", "B": "x=y"}
    ledger.close()


def test_contract_summary_names_a_torch_workloads_figure_and_env() -> None:
    from rich.console import Console

    from tui.screens.steps.contract import contract_table

    w = m.Workload.parse("gelu=torch:kernel:run")
    w.env = {"MALLOC_TRIM_THRESHOLD_": "68719476736"}
    s = m.Session(title="t", repo="/r", contract=m.Contract(workloads=[w]))
    console = Console(width=160, record=True)
    console.print(contract_table(s))
    out = console.export_text()
    assert "figure   time per call (ms), median of the calls after warm-up" in out
    assert "env      gelu MALLOC_TRIM_THRESHOLD_=68719476736" in out
