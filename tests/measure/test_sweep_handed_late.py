"""A killed process hands its children to us only when it dies, which can be after the
sweep listed our children and before it reaped the dead one (a loaded full suite left a
setsid chain's two sleeps running). The sweep must look again after each reap."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from measure import orphans

PARENT = """
import os, subprocess, sys
big = bytearray(1_200_000_000); big[::4096] = b"x" * len(big[::4096])  # slow to tear down
kids = [subprocess.Popen(["sleep", "300"]) for _ in range(2)]
open(sys.argv[1], "w").write(" ".join(str(k.pid) for k in kids))
import time; time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.slow  # over 2 s at rest: kept out of the quick subset
def test_children_handed_over_after_the_listing_are_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not orphans.become_subreaper():
        pytest.skip("no subreaper on this system")
    mark = {"GPUOPT_TEST_SWEEP": "late"}
    pids_file = tmp_path / "kids"
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(pids_file)], env={**os.environ, **mark}
    )
    while not pids_file.exists() or not pids_file.read_text():
        if parent.poll() is not None:
            pytest.fail("the parent ended early")
        time.sleep(0.01)  # waits on the parent's own word that its children run
    kids = [int(p) for p in pids_file.read_text().split()]
    real = orphans._children

    def listed_then_preempted() -> list[int]:
        out = real()
        time.sleep(0.3)  # a busy machine's turn in the run queue, right after the listing
        return out

    monkeypatch.setattr(orphans, "_children", listed_then_preempted)
    try:
        orphans.sweep("GPUOPT_TEST_SWEEP", "late")
        parent.wait(timeout=10)
        left = [k for k in kids if _alive(k)]
        assert left == [], "children handed to us after the listing outlived the sweep"
    finally:
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except ProcessLookupError:
                pass
