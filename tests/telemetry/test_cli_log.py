"""`gpuopt telemetry` into a log file or a pipe: it writes as it goes, not only at the end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_live_view_into_a_pipe_writes_while_it_runs() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="120")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "telemetry", "--replay", "clean", "--interval", "0.3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        # frames read while it runs (an event each), not a count after a fixed sleep
        for line in proc.stdout:
            seen.append(line)
            if sum("GPU 0" in x for x in seen) >= 3:
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    frames = "".join(seen).count("GPU 0")
    assert frames >= 3, "".join(seen) + out  # one frame per interval, not one at the end
    assert "Traceback" not in err
