"""SIGTERM, SIGHUP and SIGKILL sent to a real `gpuopt round` / `gpuopt baseline`.

TERM and HUP take Ctrl+C's path: the current run ends, the round or baseline is marked
interrupted, the worktrees are removed and gpuopt exits with 128+signal. After KILL the
workload dies with gpuopt, and the next start closes the round and removes its worktrees.
In every case no process of the workload is left, `setsid` grandchildren included.

Each flagged run lasts until the test releases it, after gpuopt said it took the signal:
the tests wait on those events, never on a time, so a loaded machine cannot reorder them.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from conftest import run_git
from engine_procs import (
    STOPPING,
    Stderr,
    kill_all,
    make_session,
    read_pids,
    spawn,
    still_alive,
    wait_for,
    workload,
)

from ledger import Ledger
from session import models as m

ROUND = ["--min-blocks", "2", "--max-blocks", "3", "--no-telemetry", "--seed", "1"]


def _slots(tmp_path: Path) -> list[Path]:
    base = tmp_path / "worktrees"
    return sorted(base.iterdir()) if base.is_dir() else []


@pytest.fixture
def slow_session(make_repo, tmp_path):
    flag, pids = tmp_path / "slow", tmp_path / "pids"
    repo, ledger, sid = make_session(make_repo, tmp_path, workload(flag, pids, _release(tmp_path)))
    flag.touch()  # from here every run leaves processes behind and lasts until released
    yield repo, ledger, sid, pids
    _release(tmp_path).touch()
    kill_all(read_pids(pids))


def _release(tmp_path: Path) -> Path:
    return tmp_path / "release"


def _first_run_started(pids: Path) -> None:
    wait_for(lambda: len(read_pids(pids)) >= 3, what="the first run to start")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_term_and_hup_stop_a_round_after_the_current_run(slow_session, tmp_path, sig):
    repo, ledger, sid, pids = slow_session
    proc = spawn(ledger, "round", sid, *ROUND)
    err_lines = Stderr(proc)
    _first_run_started(pids)
    proc.send_signal(sig)
    err_lines.wait_for(STOPPING)
    _release(tmp_path).touch()  # the current run may end now
    code, err = err_lines.finish()
    assert code == 128 + sig, err
    assert len(read_pids(pids)) == 3, "a new run started after the signal"
    with Ledger.open(ledger) as led:
        (rnd,) = led.list(m.Round, session_id=sid)
        runs = led.list(m.Run, round_id=rnd.id)
    assert rnd.status is m.RoundStatus.INTERRUPTED and rnd.ended_at is not None
    assert len(runs) == 1 and runs[0].status is m.RunStatus.OK  # the current run ended well
    assert _slots(tmp_path) == [] and run_git(repo, "worktree", "list").count("\n") == 1
    assert still_alive(read_pids(pids), timeout_s=1.0) == []
    assert "Traceback" not in err


def test_hup_stops_a_baseline_which_is_marked_interrupted(slow_session, tmp_path):
    repo, ledger, sid, pids = slow_session
    proc = spawn(ledger, "baseline", sid, "--runs", "4", "--no-telemetry")
    err_lines = Stderr(proc)
    _first_run_started(pids)
    proc.send_signal(signal.SIGHUP)
    err_lines.wait_for(STOPPING)
    _release(tmp_path).touch()
    code, err = err_lines.finish()
    assert code == 128 + signal.SIGHUP, err
    with Ledger.open(ledger) as led:
        latest = led.latest_baseline(sid)
    assert latest is not None and latest.reproducibility is m.Reproducibility.UNJUDGED
    assert latest.reproducibility_detail.startswith("interrupted after 1 of 5 runs")
    assert _slots(tmp_path) == [] and run_git(repo, "worktree", "list").count("\n") == 1
    assert still_alive(read_pids(pids), timeout_s=1.0) == []


def test_a_second_term_aborts_the_current_run(slow_session, tmp_path):
    _, ledger, sid, pids = slow_session
    proc = spawn(ledger, "round", sid, *ROUND)
    err_lines = Stderr(proc)
    _first_run_started(pids)
    proc.send_signal(signal.SIGTERM)
    err_lines.wait_for(STOPPING)  # two TERMs sent at once may arrive as one
    proc.send_signal(signal.SIGTERM)  # never released: only the abort ends this run
    code, err = err_lines.finish()
    assert code == 128 + signal.SIGTERM, err
    with Ledger.open(ledger) as led:
        (rnd,) = led.list(m.Round, session_id=sid)
    assert rnd.status is m.RoundStatus.INTERRUPTED
    assert _slots(tmp_path) == []
    assert still_alive(read_pids(pids), timeout_s=1.0) == []


@pytest.mark.slow
def test_kill_takes_the_workload_along_and_the_next_start_closes_the_round(slow_session, tmp_path):
    repo, ledger, sid, pids = slow_session
    proc = spawn(ledger, "round", sid, *ROUND)
    _first_run_started(pids)
    assert len(_slots(tmp_path)) == 2  # the baseline's and the variant's
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert still_alive(read_pids(pids), timeout_s=5.0) == []
    (tmp_path / "slow").unlink()  # the next round runs quickly
    again = spawn(ledger, "round", sid, *ROUND)
    _, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    with Ledger.open(ledger) as led:
        first, second = led.list(m.Round, session_id=sid)
    assert first.status is m.RoundStatus.INTERRUPTED and first.pid == proc.pid
    assert second.status is m.RoundStatus.COMPLETED and second.number == 2
    assert _slots(tmp_path) == [] and run_git(repo, "worktree", "list").count("\n") == 1


def test_a_round_that_ends_normally_leaves_no_process(slow_session, tmp_path):
    _, ledger, sid, pids = slow_session
    _release(tmp_path).touch()  # every run ends at once, still leaving its processes
    proc = spawn(ledger, "round", sid, "--min-blocks", "2", "--max-blocks", "2",
                 "--no-telemetry")  # fmt: skip
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    found = read_pids(pids)
    assert len(found) == 3 * 6  # two warm-ups and two blocks of two arms
    assert still_alive(found, timeout_s=0.5) == []
    assert os.environ.get("GPUOPT_OWNER") is None  # the tests' own environment is unmarked


def test_a_dropped_terminal_ends_the_round_as_interrupted(slow_session, tmp_path):
    """As over SSH: gpuopt draws its live progress on a terminal, which then goes away
    (the kernel sends SIGHUP, and writing to the terminal fails from then on)."""
    import fcntl
    import pty
    import subprocess
    import sys
    import termios
    import threading

    from engine_procs import ROOT, env

    repo, ledger, sid, pids = slow_session
    master, slave = pty.openpty()

    def own_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "--ledger", str(ledger), "round", sid, *ROUND],
        stdin=slave, stdout=slave, stderr=slave, env=env(), cwd=ROOT,
        start_new_session=True, preexec_fn=own_terminal,
    )  # fmt: skip
    os.close(slave)
    seen = bytearray()

    def drain() -> None:
        try:
            while chunk := os.read(master, 65536):
                seen.extend(chunk)
        except OSError:
            pass

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    _first_run_started(pids)
    os.close(master)  # the connection drops
    # the hangup's handler leaves no line to read (the terminal is gone): its mark is
    # the round's stop, which lets the released run end and starts no other
    _release(tmp_path).touch()
    proc.wait(timeout=120)
    assert proc.returncode == 128 + signal.SIGHUP, bytes(seen[-2000:])
    assert b"\x1b[" in seen  # it was drawing its live progress on the terminal
    with Ledger.open(ledger) as led:
        (rnd,) = led.list(m.Round, session_id=sid)
    assert rnd.status is m.RoundStatus.INTERRUPTED
    assert _slots(tmp_path) == [] and run_git(repo, "worktree", "list").count("\n") == 1
    assert still_alive(read_pids(pids), timeout_s=1.0) == []


@pytest.mark.slow
def test_term_stops_the_headless_demo(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUOPT_WORKTREES", str(tmp_path / "worktrees"))
    ledger = tmp_path / "l.db"
    demo = ["demo", "--no-tui", "--workload", "command", "--dir", str(tmp_path / "repo")]
    proc = spawn(ledger, *demo, "--runs", "4", "--blocks", "2", "--max-blocks", "2")

    def measuring() -> bool:  # a run has been kept: the next one is the current run
        if not ledger.exists():
            return False
        with Ledger.open(ledger) as led:
            return bool(led.list(m.Baseline)) and bool(led.list(m.Run))

    wait_for(measuring, timeout_s=60, what="the demo's baseline runs to start")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    with Ledger.open(ledger) as led:
        (baseline,) = led.list(m.Baseline)
    assert baseline.reproducibility_detail.startswith("interrupted")
    assert _slots(tmp_path) == []
    # after the current run, as for `gpuopt baseline`: nothing after the baseline started
    assert "stopped after the current run" in err
    with Ledger.open(ledger) as led:
        assert led.list(m.Hypothesis) == [] and led.list(m.Variant) == []
        runs = led.list(m.Run)  # the ones kept before the signal, and the current one
    assert runs and all(r.status is m.RunStatus.OK for r in runs), [r.error for r in runs]


def test_a_second_hup_does_not_abort_the_current_run(slow_session, tmp_path):
    _, ledger, sid, pids = slow_session
    proc = spawn(ledger, "round", sid, *ROUND)
    err_lines = Stderr(proc)
    _first_run_started(pids)
    proc.send_signal(signal.SIGHUP)
    err_lines.wait_for(STOPPING)  # as a login shell passes the hangup on after the kernel's
    proc.send_signal(signal.SIGHUP)
    _release(tmp_path).touch()
    code, err = err_lines.finish()
    assert code == 128 + signal.SIGHUP, err
    with Ledger.open(ledger) as led:
        (rnd,) = led.list(m.Round, session_id=sid)
        runs = led.list(m.Run, round_id=rnd.id)
    assert rnd.status is m.RoundStatus.INTERRUPTED
    assert len(runs) == 1 and runs[0].status is m.RunStatus.OK
    assert still_alive(read_pids(pids), timeout_s=1.0) == []
