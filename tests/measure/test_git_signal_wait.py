"""A signal's Python handler runs while git is waited on, however the signal came.

A loaded suite run hung in tests/measure/test_git_corners.py: Ctrl+C sent while a
checkout filter waited, and the process never ended. A signal taken when no system call
is under way (just before poll() begins, or on another thread) interrupts no wait, so with
one wait to git's end its handler waits for git. Here the signal goes to a thread while
the main thread blocks it, which is that case made certain; the handler ends the wait."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from measure.git import git


@pytest.mark.skipif(sys.platform != "linux", reason="pthread_sigmask: Linux")
def test_a_signal_taken_off_the_wait_runs_its_handler_while_git_runs(tmp_path: Path) -> None:
    release, began = tmp_path / "release", tmp_path / "began"
    handled = threading.Event()

    def handler(signum: int, frame: object) -> None:
        release.touch()  # what git's command waits for: it ends once the handler ran
        handled.set()

    def sender() -> None:
        while not began.exists():  # the command is under way: the main thread waits on it
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGUSR1)

    # made before the main thread blocks SIGUSR1 (a thread inherits its maker's mask):
    # the signal can land only on it, never interrupting the main thread's wait
    threading.Thread(target=sender, daemon=True).start()
    alias = f"!touch '{began}'; n=0; while [ ! -e '{release}' ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done; test -e '{release}'"  # noqa: E501
    previous = signal.signal(signal.SIGUSR1, handler)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    try:
        done = git(["-c", f"alias.waits={alias}", "waits"], tmp_path, check=False)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
        signal.signal(signal.SIGUSR1, previous)
    assert handled.is_set()
    assert done.returncode == 0, done.stderr  # before: 20 s, then 1 (never released)
