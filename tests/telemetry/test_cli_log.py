"""`gpuopt telemetry` into a log file or a pipe: it writes as it goes, not only at the end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_live_view_into_a_pipe_writes_while_it_runs() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="120")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "telemetry", "--replay", "clean", "--interval", "0.3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    try:
        time.sleep(3.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    frames = out.count("GPU 0")
    assert frames >= 3, out  # one frame per interval, not one frame when it stops
    assert "Traceback" not in err
