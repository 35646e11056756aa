"""Commands that stream into a pipe whose reader goes away (`gpuopt telemetry | head -3`):
a view ends at once with status 0, a measurement goes on silenced (test_round_output_closed);
neither prints a traceback. Real pipes, closed by the reader after its first line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="120")


def _read_one_line_and_leave(*argv: str) -> tuple[int, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    try:
        assert proc.stdout.readline()  # as `head -1` reads it
        proc.stdout.close()  # then goes away: the next write fails with EPIPE
        rc = proc.wait(timeout=60)  # a view that ignores its reader never gets here
        return rc, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("source", [[], ["--replay", "clean"]], ids=["host", "replay"])
def test_telemetry_into_a_pipe_ends_when_its_reader_leaves(source: list[str]) -> None:
    rc, err = _read_one_line_and_leave("telemetry", "--interval", "0.1", *source)
    assert rc == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_compare_into_a_pipe_whose_reader_left_is_quiet() -> None:
    rc, err = _read_one_line_and_leave(
        "compare", f"{sys.executable} -c pass", f"{sys.executable} -c pass", "--runs", "3",
        "--max-runs", "3", "--warmup", "0",
    )  # fmt: skip
    assert rc == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_a_baseline_whose_progress_reader_left_is_recorded(make_repo, tmp_path: Path) -> None:
    """`gpuopt baseline ... 2>&1 | head -1`: the progress goes quiet, the baseline is
    measured to its end, kept, and the command exits 0 with no traceback."""
    from engine_procs import make_session

    from ledger import Ledger
    from session import models as m

    _repo, ledger, sid = make_session(make_repo, tmp_path, "cat value.txt")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "--ledger", str(ledger), "baseline", sid, "--runs", "6",
         "--no-telemetry"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    assert proc.stderr is not None
    assert proc.stderr.readline()
    proc.stderr.close()  # the reader leaves after its first line
    assert proc.wait(timeout=120) == 0
    with Ledger.open(ledger) as led:
        latest = led.latest_baseline(sid)
    assert latest is not None and latest.reproducibility is m.Reproducibility.REPRODUCIBLE
    assert latest.runs_per_workload >= 6
