"""A run's peak RSS is said even when gpuopt was started by a process that once was larger
than the command (a driver script that loaded a model, a pytest worker late in the suite).

Linux hands a process the high-water mark of the one it was exec'd from, so
getrusage(RUSAGE_SELF) in gpuopt can be the parent's peak; a child's own peak, from wait4,
never includes it. Comparing with the former hid every figure (CI saw no
memory_usage_byte). The real launcher here: a process that peaks at 600 MB, frees it, and
starts run_command in a child it execs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LAUNCH = """
import subprocess, sys
x = bytearray(600_000_000); del x  # this process's peak: 600 MB
sys.exit(subprocess.run([sys.executable, "-c", sys.argv[1]], cwd=sys.argv[2]).returncode)
"""

MEASURE = """
import json, sys
from measure.runner import run_command
big = f"{sys.executable} -c 'x = bytearray(300_000_000)'"
small = f"{sys.executable} -c 'pass'"
print(json.dumps([run_command(c, ".", shell=None).peak_rss_bytes for c in (big, small)]))
"""


@pytest.mark.slow  # over 2 s at rest: kept out of the quick subset
def test_a_runs_peak_is_said_though_gpuopts_parent_was_bigger():
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, MEASURE, str(ROOT)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    big, small = json.loads(done.stdout)
    assert big is not None and big > 300_000_000, done.stdout
    # a command smaller than gpuopt itself still gets no figure (it would be gpuopt's)
    assert small is None or small < 300_000_000, done.stdout


def test_growth_between_the_floor_and_the_fork_does_not_become_a_commands_peak(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gpuopt's memory can grow after the run starts and before it forks (a thread of
    ours, Popen's own work); `true` then inherits that and must still read 'no figure',
    not our growth as its peak (a loaded full suite saw 514 MB for `true`)."""
    from measure import orphans, runner

    held: list[bytearray] = []
    real_tick = orphans.boot_tick

    def grow_then_tick() -> int:  # runs after the run began, before its fork
        grown = bytearray(48 * 1024 * 1024)
        grown[::4096] = b"x" * len(grown[::4096])  # touched: resident
        held.append(grown)
        return real_tick()

    monkeypatch.setattr(orphans, "boot_tick", grow_then_tick)
    result = runner.run_command("true", tmp_path)
    assert held, "the growth ran inside the run"
    assert result.status == "ok"
    assert result.peak_rss_bytes is None


def test_our_mark_at_the_fork_is_the_floor_though_it_reads_lower_after_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child's figure starts from our resident set when it execs. Read only after the
    end, our own mark can say less than that: a fresh-clone CI run saw `true` read 711 MB,
    the pytest worker's size, where no figure is right. Modelled here: our mark reads
    high while the child lives (a zombie too) and low once it is reaped."""
    from measure import runner, spawn

    pids: list[int] = []

    class Recorded(spawn.Start):
        def now(self) -> int:
            pids.append(super().now())
            return pids[-1]

    def mark_that_falls() -> int:
        alive = bool(pids) and Path(f"/proc/{pids[-1]}").exists()
        return 64 * 1024 * 1024 if alive else 1  # KiB: 64 GiB while it lives, then 1 KiB

    monkeypatch.setattr(spawn, "Start", Recorded)
    monkeypatch.setattr(runner, "own_peak_kib", mark_that_falls)
    result = runner.run_command("true", tmp_path)
    assert pids and result.status == "ok"
    assert result.peak_rss_bytes is None


GROW_DURING = """
import json, sys
from measure.runner import run_command
held = []
def grow(_pid):  # gpuopt grows while the command runs: 600 MB, touched
    x = bytearray(600_000_000); x[::4096] = b"x" * len(x[::4096]); held.append(x)
big = f"{sys.executable} -c 'x = bytearray(300_000_000); x[::4096] = b\\"x\\" * len(x[::4096])'"
print(json.dumps(run_command(big, ".", shell=None, on_start=grow).peak_rss_bytes))
"""


@pytest.mark.slow  # a fresh interpreter that touches 900 MB: over 2 s on a loaded machine
def test_our_growth_while_the_command_runs_does_not_hide_its_peak() -> None:
    """The floor is our mark at the child's exec. Our growth after it is not in the child's
    figure: a mark read again after the end took it for the floor and said nothing of a
    300 MB command whose runner grew by 600 MB meanwhile."""
    done = subprocess.run(
        [sys.executable, "-c", GROW_DURING], capture_output=True, text=True, check=True, cwd=ROOT
    )
    peak = json.loads(done.stdout)
    assert peak is not None and 300_000_000 < peak < 600_000_000, done.stdout


def test_a_mark_a_few_pages_under_the_inherited_one_still_gives_no_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The figure `true` inherits at its exec is the kernel's per-CPU-batched count of our
    pages; /proc's VmHWM can be the exact sum, a few batches lower. A fresh-clone CI run saw
    `true` read 697 MB (the pytest worker's size) with the floor read after the exec.
    Modelled here: our mark reads 256 KiB under the real one; no figure is still right."""
    from measure import peak_rss, runner

    real = peak_rss.own_peak_kib
    monkeypatch.setattr(runner, "own_peak_kib", lambda: real() - 256)
    result = runner.run_command("true", tmp_path)
    assert result.status == "ok"
    assert result.peak_rss_bytes is None
