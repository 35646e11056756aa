"""A signal's Python handler runs while a run is waited on, however the signal came.

The runner waits on the run's pidfd. A signal taken when no system call is under way (just
before poll() begins, or on another thread) interrupts no wait, and Python runs its handler
only when the wait returns. A loaded run of the suite found it: HUP sent as the first run
began, and gpuopt's "stopping after the current run" never came, since the run lasts until
it is stopped. Here the signal goes to a thread while the main thread blocks it, which is
that case made certain; the handler is what ends the run."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from measure.runner import RunStatus, run_command


@pytest.mark.skipif(sys.platform != "linux", reason="pidfd and pthread_sigmask: Linux")
def test_a_signal_taken_off_the_wait_still_runs_its_handler_during_the_run(tmp_path: Path) -> None:
    release = tmp_path / "release"
    handled = threading.Event()

    def handler(signum: int, frame: object) -> None:
        release.touch()  # what the run waits for: it ends only once the handler ran
        handled.set()

    started = threading.Event()

    def sender() -> None:
        started.wait(30)
        os.kill(os.getpid(), signal.SIGUSR1)

    # made before the main thread blocks SIGUSR1 (a thread inherits its maker's mask):
    # the signal can land only on it, never interrupting the main thread's wait
    thread = threading.Thread(target=sender, daemon=True)
    thread.start()

    def send_from_a_thread(pid: int) -> None:
        started.set()

    previous = signal.signal(signal.SIGUSR1, handler)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    try:
        res = run_command(
            f"while [ ! -e {release} ]; do sleep 0.02; done",
            tmp_path,
            timeout_s=20,
            on_start=send_from_a_thread,
        )
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
        signal.signal(signal.SIGUSR1, previous)
    assert handled.is_set()
    assert res.status is RunStatus.OK, res  # before: it timed out, its handler never ran
