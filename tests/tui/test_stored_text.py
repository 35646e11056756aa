"""Every screen of the app shows a hostile ledger's text literally and safely.

A foreign ledger is made by appending generated text (Rich/Textual markup, terminal
control sequences) to every string stored in the sample session: titles, names, ids,
commands, notes, output tails. The picker, every step of the session screen and review
must draw it without a crash, without a raw ESC or C1 byte, and with the text readable.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hostile_text import FRAGMENTS, hostile, raw_controls
from hypothesis import HealthCheck, example, given, settings
from pydantic import BaseModel, ValidationError
from tui_helpers import SID, sample_ledger, settle, steady_app, step_keys

from ledger import Ledger
from ledger.store import TABLES
from tui.display import plain
from tui.screens.review import ReviewScreen
from tui.screens.session import SessionScreen

SIZE = (250, 50)
OLD = "01d5e5510000"  # the sample's older session
ISSUE = "[/dev/shm]bench[fp16]\x1b]0;pwned\x07\x1b[2J\x9b2J\x1b]52;c;aGk=\x07"
FORBID = "=, \n\t"  # the property test's text: one stored string holds none of these
# Every hostile fragment the strategy can draw (those without a forbidden character), in
# one string, with wide, combining and astral text: each kind of input in one drawing.
EVERY_FRAGMENT = (
    "x"
    + "".join(f for f in FRAGMENTS if not any(c in f for c in FORBID))
    + "\u6f22e\u0301\U0001f600"
)


def _append(obj: Any, suffix: str) -> Any:
    """Every plain string of a model (keys of its dict fields too; enums and field names
    not) with `suffix` appended."""
    if isinstance(obj, BaseModel):
        return {name: _append(getattr(obj, name), suffix) for name in type(obj).model_fields}
    if type(obj) is str:
        return obj + suffix
    if isinstance(obj, dict):
        return {_append(k, suffix): _append(v, suffix) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_append(v, suffix) for v in obj]
    return obj


def _poisoned(model: BaseModel, suffix: str) -> BaseModel:
    """The model with the suffix on every string its validators accept."""
    data = _append(model, "")
    new = _append(model, suffix)
    for _ in range(20):
        try:
            return type(model).model_validate(new)
        except ValidationError as exc:
            for err in exc.errors():  # put back the original where a validator refused
                top, *rest = err["loc"]
                if rest and isinstance(data[top], dict) and rest[0] in data[top]:
                    new[top][rest[0]] = data[top][rest[0]]
                else:
                    new[top] = data[top]
    raise AssertionError(f"could not poison {type(model).__name__}")


def hostile_ledger(tmp_path: Path, suffix: str) -> Path:
    clean = sample_ledger(tmp_path / "clean.db")
    db = tmp_path / "hostile.db"
    db.unlink(missing_ok=True)
    with Ledger.open(clean, readonly=True) as src, Ledger.open(db) as dst:
        for cls in TABLES:
            items = [_poisoned(x, suffix) for x in src.list(cls)]
            if items:
                dst.put(*items)
    return db


def screen_text(app: Any) -> str:
    """What the terminal would be sent for the screen in front, as text."""
    from rich.console import Console

    console = Console(
        width=SIZE[0], height=SIZE[1], file=io.StringIO(), force_terminal=True,
        color_system="truecolor", record=True, legacy_windows=False,
    )  # fmt: skip
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text(styles=False)


async def visit_every_screen(db: Path, suffix: str) -> dict[str, str]:
    """Picker, each step of the session, review (both tabs): the text of each."""
    seen: dict[str, str] = {}
    app = steady_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen["picker"] = screen_text(app)
        app.push_screen(SessionScreen(SID + suffix))
        await settle(pilot)
        for key in "12345678":
            await step_keys(pilot, key)
            await settle(pilot)
            seen[f"step {key}"] = screen_text(app)
        app.pop_screen()
        await settle(pilot)
        app.push_screen(SessionScreen(OLD + suffix))  # no baseline: the contract's form
        await settle(pilot)
        seen["contract form"] = screen_text(app)
        app.pop_screen()
        await settle(pilot)
        app.push_screen(ReviewScreen())
        await settle(pilot)
        seen["review"] = screen_text(app)
        await pilot.press("h")
        await settle(pilot)
        seen["review rejected"] = screen_text(app)
        assert isinstance(app.screen, ReviewScreen)
    return seen


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_issues_text_is_shown_literally_everywhere(tmp_path: Path) -> None:
    db = hostile_ledger(tmp_path, ISSUE)
    seen = await visit_every_screen(db, ISSUE)
    for where, text in seen.items():
        assert not raw_controls(text), (where, raw_controls(text))
        assert "[/dev/shm]bench[fp16]" in text, where  # markup shown, not read
    assert plain("Softmax: fewer passes over the logits" + ISSUE) in seen["picker"]
    assert plain("Softmax: fewer passes over the logits" + ISSUE) in seen["review"]
    assert plain("Skip the max subtraction to save a pass" + ISSUE) in seen["review rejected"]


def test_a_hostile_ledger_is_safe_to_review(tmp_path: Path) -> None:
    """`gpuopt review` itself: the app in review mode on the foreign file."""
    import asyncio

    db = hostile_ledger(tmp_path, ISSUE)

    async def go() -> str:
        app = steady_app(db, review=True, readonly=True, telemetry="off")
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("enter")  # open the session, read-only
            await settle(pilot)
            assert isinstance(app.screen, SessionScreen) and app.screen.readonly
            return screen_text(app)

    text = asyncio.run(go())
    assert not raw_controls(text)
    assert "\\x1b]0;pwned\\x07" in text


@pytest.mark.slow  # a few seconds per example: every screen is drawn
@settings(
    max_examples=1, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(suffix=hostile(forbid=FORBID))
@example(suffix=EVERY_FRAGMENT)  # every fragment at once; then a drawn one (max_examples)
def test_any_stored_text_draws_every_screen_safely(tmp_path: Path, suffix: str) -> None:
    import asyncio

    assert suffix == suffix.strip() and not any(c in suffix for c in FORBID)

    db = hostile_ledger(tmp_path, suffix)
    seen = asyncio.run(visit_every_screen(db, suffix))
    for where, text in seen.items():
        assert not raw_controls(text), (where, raw_controls(text), suffix)
    if suffix.isascii() and suffix.isprintable():
        assert plain("Softmax: fewer passes over the logits" + suffix) in seen["picker"]
