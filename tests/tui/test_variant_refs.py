"""Variants from refs you can see (issue 15 item 4): the add-variant form lists the
repository's branches and tags with their last commit subject; a person picks one with the
arrows or by typing, and the variant is named after it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from textual.widgets import Select
from tui_helpers import settle, steady_app

from ledger import Ledger
from session import models as m
from session.refs import list_refs
from tui.demo.repo import BRANCHES, create_repo
from tui.demo.start import start_session
from tui.screens.modals import FormModal
from tui.screens.session import SessionScreen
from tui.widgets.form import Field


def test_refs_carry_their_subject_and_a_diff_stat_against_the_baseline(tmp_path: Path) -> None:
    repo = create_repo(tmp_path / "demo")
    main = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "main"], capture_output=True, text=True, check=True
    ).stdout.strip()
    refs = {r.name: r for r in list_refs(repo, main)}
    assert set(BRANCHES) <= set(refs)
    assert refs["fused"].subject.startswith("softmax: one torch.softmax call")
    assert refs["fused"].stat.startswith("1 file, +")
    assert refs["main"].stat == "same tree as the baseline"
    assert list_refs(tmp_path / "not-a-repo") == []


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_add_variant_form_offers_the_branches_and_names_the_variant(
    tmp_path: Path,
) -> None:
    repo = create_repo(tmp_path / "demo")
    db = tmp_path / "l.db"
    with Ledger.open(db) as ledger:
        session, _ = start_session(ledger, repo, "command")
    app = steady_app(db, session_id=session.id)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        screen.goto(m.StepName.ROUND)
        screen.ask_variant()
        await settle(pilot)
        form = app.screen
        assert isinstance(form, FormModal)
        pick = form.query_one("#field-ref_pick", Field)
        options = [str(getattr(p, "plain", p)) for p, _ in pick.choices or []]
        for name in BRANCHES:
            assert any(o.startswith(f"{name} · ") for o in options), (name, options)
        form.query_one("#field-ref_pick Select", Select).focus()
        await pilot.press("enter", *"no-max", "enter")
        await settle(pilot)
        assert pick.value == "no-max"
        await pilot.press("ctrl+s")
        await settle(pilot, 10)
        await app.workers.wait_for_complete()
    with Ledger.open(db) as ledger:
        variants = ledger.list(m.Variant, session_id=session.id)
        assert [v.name for v in variants] == ["no-max"]
        tested = ledger.get(m.Hypothesis, variants[0].hypothesis_id or "")
    # issue 22: the branch picked first is linked to its own idea, not to the first one
    assert tested is not None and tested.title == "Skip the max subtraction"


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_variant_from_a_patch_picked_in_the_files(tmp_path: Path) -> None:
    import sys

    from session import conduct
    from tui.widgets.file_picker import FilePicker

    repo = create_repo(tmp_path / "demo")
    patch = subprocess.run(
        ["git", "-C", str(repo), "diff", "main", "fused"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (tmp_path / "patches").mkdir()
    (tmp_path / "patches" / "fused.patch").write_text(patch, encoding="utf-8")
    db = tmp_path / "l.db"
    with Ledger.open(db) as ledger:
        session = m.Session(
            title="patch",
            repo=str(repo),
            contract=m.Contract(
                workloads=[m.Workload(name="w", command=f"{sys.executable} -c pass")]
            ),
        )
        ledger.put(session)
        conduct.record_baseline(ledger, session, runs=8, warmup=0)
    app = steady_app(db, session_id=session.id)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        cmd = next(c for c in screen.palette_commands() if "patch file" in c.title)
        cmd.run()
        await settle(pilot)
        assert isinstance(app.screen, FilePicker)
        app.screen.dismiss(str(tmp_path / "patches" / "fused.patch"))  # as enter on the file
        await settle(pilot)
        form = app.screen
        assert isinstance(form, FormModal)
        assert form.query_one("#field-patch", Field).value.endswith("fused.patch")
        await pilot.press("ctrl+s")
        await settle(pilot, 10)
    with Ledger.open(db) as ledger:
        (variant,) = ledger.list(m.Variant, session_id=session.id)
    assert variant.name == "fused" and variant.files_changed == 1
