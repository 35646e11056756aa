"""The suite holds when started under nohup or as a script's background job (SIGHUP and
SIGINT inherited ignored): tests/conftest.py gives the processes the tests start the
default dispositions. Two loaded runs started with `nohup … &` failed the same six
signal tests before (each waited 120 s for a stop that an ignored signal never asked)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ignoring_hup_and_int() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.slow
def test_the_hup_and_ctrl_c_tests_pass_in_a_suite_started_ignoring_those_signals() -> None:
    tests = [
        "tests/cli/test_signals.py::test_hup_stops_a_baseline_which_is_marked_interrupted",
        "tests/measure/test_git_corners.py::test_ctrl_c_while_a_worktree_is_made_leaves_nothing",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-o", "addopts=", *tests],
        cwd=ROOT, capture_output=True, text=True, timeout=600, preexec_fn=_ignoring_hup_and_int,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout, done.stdout[-2000:]
