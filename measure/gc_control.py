"""Python's garbage collector kept off the runs' clocks.

A full collection walks every object the process holds: 18 ms in a `gpuopt round` on
a 2-core VM (54,000 objects after its imports), landing every few hundred runs. Whichever
thread starts it holds the interpreter meanwhile, so one that falls inside a run's timed
window (between the start and the exit being seen) adds itself to that run's figure, and
one between runs adds itself to the round's time. Two measures, as timeit and pyperf take:

- `frozen_heap()` around a measuring loop: what exists when the loop starts (imports,
  the app's screens) moves out of the collector's generations (gc.freeze), so a full
  collection during the loop walks only what the loop made. Given back at its end.
- `paused()` around one run's timed window: no collection starts in it (the one that was
  due runs after the run). A run longer than LONGEST_PAUSE_S turns collection back on: a
  long run's figure cannot feel one, and the app's memory is not left uncollected.

Both nest and may be entered from several threads; the collector is never left off.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

LONGEST_PAUSE_S = 1.0

_lock = threading.Lock()
_frozen = 0  # loops inside frozen_heap()
_program_froze = False  # the heap was frozen before the outermost loop began
_paused: dict[int, float] = {}  # a pause's token -> when it began (perf_counter)
_was_enabled = True  # the collector's state before the first pause of those open


@contextmanager
def frozen_heap() -> Iterator[None]:
    """The objects alive now kept out of collections until the outermost loop ends. A heap
    the program had frozen itself stays frozen: gc.unfreeze() gives back every frozen
    object, the program's too (a test suite freezing between tests paid a walk of the whole
    heap after each in-process round)."""
    global _frozen, _program_froze
    with _lock:
        _frozen += 1
        if _frozen == 1:
            _program_froze = gc.get_freeze_count() > 0
            gc.freeze()
    try:
        yield
    finally:
        with _lock:
            _frozen -= 1
            if _frozen == 0 and not _program_froze:
                gc.unfreeze()


class Pause:
    """One run's pause: `expire()` from the run's wait loop, `end()` when its clock stops."""

    def __init__(self) -> None:
        global _was_enabled
        self.began = time.perf_counter()
        with _lock:
            if not _paused:
                _was_enabled = gc.isenabled()
            _paused[id(self)] = self.began
            gc.disable()

    def expire(self, now: float) -> None:
        """Collection back on once the run has lasted LONGEST_PAUSE_S."""
        if now - self.began >= LONGEST_PAUSE_S:
            self.end()

    def end(self) -> None:
        with _lock:
            if _paused.pop(id(self), None) is None:
                return  # ended already
            oldest = min(_paused.values(), default=None)
            # Back on when no pause is left, or when those left are all long ones.
            if _was_enabled and (oldest is None or time.perf_counter() - oldest >= LONGEST_PAUSE_S):
                gc.enable()


@contextmanager
def paused() -> Iterator[Pause]:
    pause = Pause()
    try:
        yield pause
    finally:
        pause.end()
