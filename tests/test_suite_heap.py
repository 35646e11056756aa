"""The suite's collector (tests/conftest.py): between tests, what lives on is frozen out of
the cyclic collector's walks, and what a test left as garbage is collected first, not
frozen for good."""

from __future__ import annotations

import gc
import runpy
import weakref
from pathlib import Path

freeze = runpy.run_path(str(Path(__file__).parent / "conftest.py"))["_freeze_what_lives_on"]


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_a_test_starts_on_a_frozen_heap() -> None:
    assert gc.get_freeze_count() > 10_000  # pytest, its plugins and the imports at least


def test_young_objects_are_collected_in_larger_batches() -> None:
    young = runpy.run_path(str(Path(__file__).parent / "conftest.py"))["YOUNG_COLLECTION"]
    assert gc.get_threshold()[0] == young > 700  # Python's default: 700


def test_garbage_is_collected_before_the_freeze_and_what_lives_is_frozen() -> None:
    gc.unfreeze()
    dropped = _Node()
    gone = weakref.ref(dropped)
    kept = _Node()
    del dropped
    freeze()
    assert gone() is None  # collected, not frozen
    assert gc.get_freeze_count() > 0 and kept.me is kept
    freeze()  # again with nothing new: what was frozen stays frozen
    assert gc.get_freeze_count() > 0
