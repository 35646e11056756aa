"""Fixtures of the app's tests: every test draws the same picture each time."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from scenes import steady_widgets

# This file takes the module name `conftest` from tests/conftest.py for the tests here
# (`from conftest import run_git`): the root's helper is passed on, not copied.
run_git = runpy.run_path(str(Path(__file__).parents[1] / "conftest.py"))["run_git"]


@pytest.fixture(autouse=True)
def no_cursor_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    """No input or text area blinks its cursor (as Harlequin's tests do): a blink would
    make two pictures of the same screen differ."""
    for obj, name, value in steady_widgets():
        monkeypatch.setattr(obj, name, value)
