"""No process of a run outlives it, nor gpuopt: real processes, `setsid` included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from measure import orphans
from measure.preload import PreloadedPython
from measure.runner import run_command, run_hook

ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    """Running: a zombie (dead, waiting to be reaped) is not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _running(pids: list[int], within_s: float = 0.0) -> list[int]:
    end = time.monotonic() + within_s
    while True:
        left = [p for p in pids if _alive(p)]
        if not left or time.monotonic() >= end:
            return left
        time.sleep(0.02)


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


LEFTOVERS = (
    "setsid sleep 300 & echo $! >> {f}; "  # a session of its own: out of the run's group
    "sleep 300 & echo $! >> {f}; "  # a plain background child, in the run's group
    "setsid bash -c 'sleep 300 & echo $! >> {f}; setsid sleep 300 & echo $! >> {f}; "
    "echo $$ >> {f}; sleep 300' & "  # a chain: a setsid shell with its own children
)


def test_setsid_descendants_die_with_a_normal_end(tmp_path: Path) -> None:
    f = tmp_path / "pids"
    res = run_command(LEFTOVERS.format(f=f) + "sleep 0.3", tmp_path)
    pids = _pids(f)
    try:
        assert res.ok and len(pids) == 5
        assert _running(pids) == []  # at once: the run is over only when they are gone
        assert res.containment == orphans.SUBREAPER
    finally:
        _kill(pids)


def test_a_run_started_in_a_worker_thread_leaves_nothing(tmp_path: Path) -> None:
    """The app runs rounds in a worker thread: its run's orphans are handed to the main
    thread, not to the thread that started it, and the sweep reads only those two."""
    f = tmp_path / "pids"
    results: list[object] = []
    worker = threading.Thread(
        target=lambda: results.append(run_command(LEFTOVERS.format(f=f) + "sleep 0.3", tmp_path))
    )
    worker.start()
    worker.join()
    pids = _pids(f)
    try:
        assert len(results) == 1 and results[0].ok and len(pids) == 5  # type: ignore[attr-defined]
        assert _running(pids) == []
    finally:
        _kill(pids)


def test_a_mark_past_64_kib_of_environment_is_found() -> None:
    """A process's mark can come after 100 KB of its other variables: more than one read
    of /proc/PID/environ returns, so the sweep reads to the end."""
    entry = f"{orphans.RUN_VAR}=late"
    env = {"BIG": "x" * 100_000, orphans.RUN_VAR: "late"}  # in this order in its environ
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; print('up', flush=True); sys.stdin.read()"],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        # its line: the exec is complete (until then /proc may show no environment yet)
        assert child.stdout is not None and child.stdout.readline() == b"up\n"
        assert Path(f"/proc/{child.pid}/environ").read_bytes().index(entry.encode()) > 65536
        assert orphans._has_mark(child.pid, entry.encode())
    finally:
        child.kill()
        child.communicate()


def test_a_descendant_that_cleared_its_environment_dies_too(tmp_path: Path) -> None:
    """`env -i` drops the marks; as the subreaper gpuopt is handed it all the same."""
    f = tmp_path / "pids"
    res = run_command(
        f"env -i setsid sleep 300 & echo $! >> {f}; "
        f"env -i setsid bash -c 'sleep 300 & echo $! >> {f}; sleep 300' & echo $! >> {f}; "
        "sleep 0.3",
        tmp_path,
    )
    assert res.exit_code == 0 and res.containment == orphans.SUBREAPER
    pids = _pids(f)
    assert len(pids) == 3
    try:
        assert _running(pids, within_s=2.0) == []
    finally:
        _kill(pids)


def test_gpuopts_own_children_survive_a_sweep(tmp_path: Path) -> None:
    """What gpuopt itself started (in its own group, or marked as its own) is not a run's."""
    mine = subprocess.Popen(["sleep", "30"])
    marked = subprocess.Popen(
        ["sleep", "30"], start_new_session=True,
        env=dict(orphans.mark({**os.environ})),
    )  # fmt: skip
    try:
        run_command("true", tmp_path)
        assert mine.poll() is None and marked.poll() is None
    finally:
        for p in (mine, marked):
            p.kill()
            p.wait()


def test_setsid_descendants_die_with_a_timeout(tmp_path: Path) -> None:
    f = tmp_path / "pids"
    res = run_command(LEFTOVERS.format(f=f) + "sleep 30", tmp_path, timeout_s=0.5)
    pids = _pids(f)
    try:
        assert res.status == "timeout" and len(pids) == 5
        assert _running(pids) == []
    finally:
        _kill(pids)


def test_a_hook_may_leave_a_server_until_its_job_is_swept(tmp_path: Path) -> None:
    f = tmp_path / "pids"
    job = orphans.new_token()
    res = run_hook(f"setsid sleep 300 & echo $! >> {f}", tmp_path, env={orphans.JOB_VAR: job})
    pids = _pids(f)
    try:
        assert res.exit_code == 0 and len(pids) == 1
        assert _running(pids) == pids  # a setup hook's server lives on for the job
        orphans.sweep(orphans.JOB_VAR, job)
        assert _running(pids) == []
    finally:
        _kill(pids)


def test_a_preloaded_run_leaves_nothing(tmp_path: Path) -> None:
    f = tmp_path / "pids"
    script = tmp_path / "job.py"
    script.write_text(
        textwrap.dedent(f"""
        import subprocess
        a = subprocess.Popen(["sleep", "300"], start_new_session=True)
        b = subprocess.Popen(["sleep", "300"])
        open({str(f)!r}, "w").write(f"{{a.pid}}\\n{{b.pid}}\\n")
        """)
    )
    with PreloadedPython(sys.executable, ["json"], env=dict(os.environ)) as server:
        res = server.run([str(script)], tmp_path, env=dict(os.environ))
        pids = _pids(f)
        try:
            assert res.ok and len(pids) == 2
            assert _running(pids) == []
            assert res.containment == orphans.SUBREAPER
        finally:
            _kill(pids)


def test_processes_of_a_dead_gpuopt_are_killed_at_the_next_start(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead_owner = f"{gone.pid}.1"
    env = dict(os.environ)
    stray = subprocess.Popen(["setsid", "sleep", "300"], env={**env, orphans.OWNER_VAR: dead_owner})
    mine = subprocess.Popen(["sleep", "300"], env={**env, orphans.OWNER_VAR: orphans.owner_id()})
    try:
        time.sleep(0.1)  # exec'd: /proc shows the environment it was started with
        killed = orphans.sweep_dead_owners()
        # (Another gpuopt starting on this machine may have been quicker to kill it.)
        assert stray.wait(timeout=5) == -signal.SIGKILL
        assert mine.pid not in killed and _alive(mine.pid)
    finally:
        for p in (stray, mine):
            p.kill()
            p.wait()


GUARDED = """
import sys
from measure.runner import run_command
run_command(sys.argv[1], sys.argv[2])
"""


def test_a_killed_gpuopt_takes_its_runs_with_it(tmp_path: Path) -> None:
    f = tmp_path / "pids"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", GUARDED, LEFTOVERS.format(f=f) + "echo $$ >> " + str(f)
         + "; sleep 300", str(tmp_path)],
        env=env,
    )  # fmt: skip
    try:
        end = time.monotonic() + 10
        while len(_pids(f)) < 6 and time.monotonic() < end:
            time.sleep(0.02)
        pids = _pids(f)
        assert len(pids) == 6
        proc.kill()
        proc.wait()
        assert _running(pids, within_s=5.0) == []
    finally:
        _kill(_pids(f))


def test_runs_in_the_ledger_say_how_their_descendants_were_collected(make_repo, tmp_path):

    from ledger import Ledger
    from session import conduct
    from session import models as m

    repo = make_repo(files={"value.txt": "1.00\n"})
    contract = m.Contract(
        metric=m.Metric(name="v", source=m.MetricSource.REGEX, pattern=r"(?P<value>[0-9.]+)"),
        workloads=[m.Workload(name="read", command="cat value.txt")],
    )
    with Ledger.open(tmp_path / "l.db") as ledger:
        session = m.Session(title="t", repo=str(repo), contract=contract)
        ledger.put(session)
        conduct.record_baseline(ledger, session, runs=2)
        runs = ledger.list(m.Run, session_id=session.id)
    assert runs and {getattr(r, "containment", None) for r in runs} == {orphans.SUBREAPER}


def test_a_torch_worker_pass_leaves_nothing(tmp_path: Path) -> None:
    from measure.harness import run_worker

    f = tmp_path / "pids"
    res = run_worker(LEFTOVERS.format(f=f) + "exec 1>&- 2>&-; sleep 0.2", tmp_path)
    pids = _pids(f)
    try:
        assert not res.ok and len(pids) == 5
        assert _running(pids) == []
    finally:
        _kill(pids)
