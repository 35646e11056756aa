"""Two rounds started at once on one session: one measures, the other is refused by name.

Round numbers are allocated in the write transaction that records the round, and a
round still measured by a live process blocks a second one; a dead one does not.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest
from engine_procs import make_session, spawn, wait_for

from ledger import Ledger
from session import conduct
from session import models as m

ROUND = ["--min-blocks", "2", "--max-blocks", "3", "--no-telemetry"]


@pytest.mark.slow
def test_two_rounds_at_once_one_is_refused_naming_the_first(make_repo, tmp_path):
    flag = tmp_path / "slow"
    command = f"if [ -e {flag} ]; then sleep 0.2; fi; cat value.txt"
    _, ledger, sid = make_session(make_repo, tmp_path, command)
    flag.touch()
    start = time.time() + 1.5  # both import first, then start together
    procs = [spawn(ledger, "round", sid, *ROUND, start_at=start) for _ in range(2)]
    results = [(p.wait(timeout=60), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    ran = next(r for r in results if r[0] == 0)
    refused = next(r for r in results if r[0] == 2)
    with Ledger.open(ledger) as led:
        rounds = led.list(m.Round, session_id=sid)
    assert len(rounds) == 1 and rounds[0].status is m.RoundStatus.COMPLETED
    first = rounds[0]
    winner = procs[[r[0] for r in results].index(0)]
    assert first.pid == winner.pid and first.host == socket.gethostname()
    lines = refused[2].strip().splitlines()
    assert len(lines) == 1, refused[2]
    assert f"pid {winner.pid}" in lines[0] and socket.gethostname() in lines[0]
    assert "round 1" in lines[0].lower()
    assert "Round 1" in ran[1] or "round 1" in ran[1].lower()


def test_numbers_are_unique_and_a_dead_owner_does_not_block(make_repo, tmp_path):
    _, ledger, sid = make_session(make_repo, tmp_path, "cat value.txt")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with Ledger.open(ledger) as led:
        session = led.resolve_session(sid)
        baseline = led.latest_baseline(sid)
        assert baseline is not None
        stale = m.Round(
            session_id=sid, baseline_id=baseline.id, number=1, pid=dead.pid,
            host=socket.gethostname(), summary={"owner": {"host": socket.gethostname(),
                                                           "pid": dead.pid}},
        )  # fmt: skip
        led.put(stale)
        numbers = []
        for _ in range(2):
            rnd = conduct.run_round(led, session, min_blocks=2, max_blocks=2)
            numbers.append(rnd.number)
            assert rnd.pid == os.getpid() and rnd.host == socket.gethostname()
        again = led.get(m.Round, stale.id)
    assert numbers == [2, 3]
    assert again is not None and again.status is m.RoundStatus.INTERRUPTED


def test_a_live_round_of_another_process_refuses_in_process(make_repo, tmp_path):
    _, ledger, sid = make_session(make_repo, tmp_path, "cat value.txt")
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with Ledger.open(ledger) as led:
            session = led.resolve_session(sid)
            baseline = led.latest_baseline(sid)
            assert baseline is not None
            led.put(m.Round(session_id=sid, baseline_id=baseline.id, number=4, pid=holder.pid,
                            host=socket.gethostname()))  # fmt: skip
            try:
                conduct.run_round(led, session, min_blocks=2, max_blocks=2)
            except conduct.GateRefused as exc:
                text = str(exc)
            else:
                raise AssertionError("a second live round was not refused")
            assert f"pid {holder.pid}" in text and "round 4" in text
            assert len(led.list(m.Round, session_id=sid)) == 1
            try:  # the command line asks before it starts any telemetry
                conduct.gate_round(led, session)
            except conduct.RoundBusy as exc:
                assert str(exc) == text
            else:
                raise AssertionError("the gate let a second live round through")
    finally:
        holder.kill()
        holder.wait()
    wait_for(lambda: holder.poll() is not None)
