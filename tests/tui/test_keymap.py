"""Keys remapped from the user's keymap file (binding ids -> keys, applied with
App.set_keymap); the `?` help is drawn from the active bindings, so it shows them."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import ContentSwitcher
from tui_helpers import SID, sample_ledger, settle, steady_app, step_keys

from tui.keymap import KeymapError, keymap_path, load_keymap
from tui.screens.modals import HelpModal


def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    path = keymap_path()
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_remapped_key_moves_and_the_help_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(tmp_path, monkeypatch, '[keys]\n"session.goto_3" = "z"\n')
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await step_keys(pilot, "z")
        await settle(pilot)
        assert app.screen.query_one(ContentSwitcher).current == "step-preflight"
        await step_keys(pilot, "3")  # the old key no longer goes there
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, HelpModal)
        text = modal.parts[1].plain  # the keys active now
        assert "z  Preflight" in text
        assert "3  Preflight" not in text
        assert "Save the preflight answers" in text  # the pane's own keys too


def test_a_broken_keymap_is_named_not_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _config(tmp_path, monkeypatch, "[keys\n")
    with pytest.raises(KeymapError, match=str(path)):
        load_keymap()
    path.write_text('[keys]\n"round.run" = 3\n', encoding="utf-8")
    with pytest.raises(KeymapError, match="binding ids to keys"):
        load_keymap()
    path.unlink()
    assert load_keymap() == {}


@pytest.mark.asyncio
@pytest.mark.slow
async def test_every_steps_next_line_names_the_keys_as_remapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Next line names keys: with a keymap they must be the remapped ones (the record
    step said "press x" after x had moved to y, and so did the other steps)."""
    from textual.widgets import Static

    _config(
        tmp_path,
        monkeypatch,
        "[keys]\n"
        '"record.export" = "y"\n'
        '"disposition.decide" = "o"\n'
        '"session.next_step" = "j"\n'
        '"preflight.bottleneck" = "v"\n'
        '"preflight.checklist" = "z"\n',
    )
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID)

    def next_line() -> str:
        return str(app.screen.pane().query_one(".next", Static).content)

    def preflight_summary() -> str:
        content = app.screen.pane().query_one("#preflight-summary", Static).content
        return str(getattr(content, "plain", content))

    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        shown: dict[str, str] = {}
        for key in "1234678":
            await step_keys(pilot, key)
            await settle(pilot)
            shown[key] = next_line()
            if key == "3":
                summary = preflight_summary()
    assert "press y to export" in shown["8"], shown["8"]
    assert "press x" not in shown["8"]
    assert "(j)" in shown["7"] or "press o" in shown["7"], shown["7"]
    assert "(n)" not in shown["7"] and "press d " not in shown["7"]
    assert "v sets the bottleneck" in shown["3"] or "v and z set" in shown["3"], shown["3"]
    assert " b " not in shown["3"] and " k " not in shown["3"], shown["3"]
    for key in "12346":
        assert "(n)" not in shown[key] and "or n " not in shown[key], (key, shown[key])
    assert "(v sets it)" in summary and "(z ticks items)" in summary, summary


@pytest.mark.asyncio
async def test_the_session_lists_guidance_names_its_new_key_as_remapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from textual.widgets import Static

    _config(tmp_path, monkeypatch, '[keys]\n"picker.new" = "m"\n')
    app = steady_app(sample_ledger(tmp_path / "l.db"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = str(app.screen.query_one(".guidance", Static).content)
    assert "press m to start a new one" in text, text
