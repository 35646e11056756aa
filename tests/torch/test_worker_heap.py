"""The torch worker imports torch with the collector off and freezes what the imports made
(measure/torch_worker/__main__.py): no collection during a job walks torch's objects."""

from __future__ import annotations

import subprocess
import sys

from measure.harness import WORKER

PROBE = f"""
import gc, runpy, sys
entry = runpy.run_path({str(WORKER)!r}, run_name="probe")["_main"]()
print(gc.get_freeze_count(), gc.isenabled(), "torch" in sys.modules, callable(entry))
"""


def test_the_worker_starts_with_torch_frozen_and_the_collector_on() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    frozen, enabled, has_torch, entry = done.stdout.split()
    assert int(frozen) > 100_000 and enabled == "True" and has_torch == "True", done.stdout
    assert entry == "True"
