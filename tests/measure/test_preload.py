"""Runs forked from a preloaded interpreter, with real processes (and real torch once)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from test_runner import _alive, _gone_within

from measure import preload
from measure.harness import worker_script_args
from measure.preload import PreloadedPython, PreloadError, preload_ok

SCRIPT = """
import json, os, sys
print(json.dumps({
    "argv": sys.argv[1:],
    "cwd": os.getcwd(),
    "mark": os.environ.get("MARK"),
    "secret": os.environ.get("NOT_PASSED"),
    "preloaded": "email.mime.text" in sys.modules,
    "sid": os.getsid(0) == os.getpid(),
    "value": 2.5,
}))
print("to stderr", file=sys.stderr)
"""


def _script(tmp_path: Path, text: str, name: str = "job.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def server(tmp_path: Path):
    # A module this test suite never imports, so its presence in a run proves the preload.
    with PreloadedPython(sys.executable, ["email.mime.text"], env=dict(os.environ)) as srv:
        yield srv


def test_a_run_sees_its_argv_cwd_env_and_the_preloaded_modules(tmp_path: Path, server) -> None:
    job = _script(tmp_path, SCRIPT)
    work = tmp_path / "work"
    work.mkdir()
    pids: list[int] = []
    os.environ["NOT_PASSED"] = "leak"
    try:
        r = server.run(
            [str(job), "a b", "--x"],
            work,
            env={"MARK": "m1", "PATH": os.environ["PATH"]},
            metric_source="json",
            metric_pattern="value",
            on_start=pids.append,
        )
    finally:
        del os.environ["NOT_PASSED"]
    assert r.status == "ok" and r.value == 2.5 and r.exit_code == 0
    seen = json.loads(r.stdout_tail.splitlines()[0])
    assert seen["argv"] == ["a b", "--x"]
    assert Path(seen["cwd"]) == work
    assert seen["mark"] == "m1" and seen["secret"] is None  # exactly the env given
    assert seen["preloaded"] is True and seen["sid"] is True
    assert r.stderr_tail == "to stderr\n"
    assert pids and pids[0] != server.proc.pid
    assert r.user_s is not None and r.sys_s is not None and r.wall_s > 0
    assert r.started_us < r.ended_us


def test_many_runs_keep_the_protocol_in_step(tmp_path: Path, server) -> None:
    job = _script(tmp_path, "import sys; print('{\"v\": %s}' % sys.argv[1])")
    runs = [
        server.run([str(job), str(i)], tmp_path, env={}, metric_source="json", metric_pattern="v")
        for i in range(6)
    ]
    assert [r.value for r in runs] == [0, 1, 2, 3, 4, 5]
    assert server.alive


def test_exit_codes_exceptions_and_a_missing_metric(tmp_path: Path, server) -> None:
    fails = _script(tmp_path, "import sys; sys.exit(3)", "fails.py")
    r = server.run([str(fails)], tmp_path, env={})
    assert r.status == "failed" and r.exit_code == 3 and r.value is None
    boom = _script(tmp_path, "raise ValueError('bad input x')", "boom.py")
    r = server.run([str(boom)], tmp_path, env={})
    assert r.status == "failed" and r.exit_code == 1
    assert "ValueError: bad input x" in r.error and "Traceback" in r.stderr_tail
    quiet = _script(tmp_path, "print('nothing')", "quiet.py")
    r = server.run([str(quiet)], tmp_path, env={}, metric_source="json", metric_pattern="v")
    assert r.status == "no_metric" and r.value is None and "'v'" in r.error
    killed = _script(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "k.py")
    r = server.run([str(killed)], tmp_path, env={})
    assert r.status == "failed" and r.exit_code == -9 and "signal 9" in r.error
    ok = server.run([str(quiet)], tmp_path, env={})
    assert ok.status == "ok"  # the server went on


def test_timeout_kills_the_whole_group(tmp_path: Path, server) -> None:
    pidfile = tmp_path / "child.pid"
    job = _script(
        tmp_path,
        "import subprocess, time\n"
        f"p = subprocess.Popen(['sleep', '100'])\nopen({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(100)\n",
    )
    t0 = time.perf_counter()
    r = server.run([str(job)], tmp_path, env=dict(os.environ), timeout_s=1.0)
    assert r.status == "timeout" and r.value is None and "timed out" in r.error
    assert time.perf_counter() - t0 < 10
    assert _gone_within(int(pidfile.read_text()), 2.0)
    assert server.run([str(_script(tmp_path, "pass", "p.py"))], tmp_path, env={}).ok


def test_leftovers_are_killed_when_the_run_ends(tmp_path: Path, server) -> None:
    pidfile = tmp_path / "child.pid"
    job = _script(
        tmp_path,
        "import subprocess\n"
        f"p = subprocess.Popen(['sleep', '100'])\nopen({str(pidfile)!r}, 'w').write(str(p.pid))\n",
    )
    r = server.run([str(job)], tmp_path, env=dict(os.environ))
    assert r.ok and r.wall_s < 5
    assert _gone_within(int(pidfile.read_text()), 2.0)


def test_output_keeps_only_the_tail_and_tolerates_bad_utf8(tmp_path: Path, server) -> None:
    job = _script(
        tmp_path,
        "import sys\nsys.stdout.buffer.write(b'x' * 200000 + b'\\xff end\\n')\n",
    )
    r = server.run([str(job)], tmp_path, env={})
    assert r.ok
    assert len(r.stdout_tail.encode()) <= 64 * 1024 + 8
    assert r.stdout_tail.endswith("\ufffd end\n")


def test_a_server_that_cannot_import_says_why(tmp_path: Path) -> None:
    with pytest.raises(PreloadError, match="importing no_such_module_x failed"):
        PreloadedPython(sys.executable, ["no_such_module_x"], env=dict(os.environ))
    with pytest.raises(PreloadError, match="could not start"):
        PreloadedPython(str(tmp_path / "no-python"), [], env=dict(os.environ))


def test_a_server_killed_between_runs_raises(tmp_path: Path) -> None:
    srv = PreloadedPython(sys.executable, [], env=dict(os.environ))
    try:
        srv.proc.kill()
        srv.proc.wait()
        with pytest.raises(PreloadError):
            srv.run([str(_script(tmp_path, "pass"))], tmp_path, env={})
    finally:
        srv.close()
    assert not srv.alive


def test_close_stops_the_server(tmp_path: Path) -> None:
    srv = PreloadedPython(sys.executable, [], env=dict(os.environ))
    pid = srv.proc.pid
    assert _alive(pid)
    srv.close()
    assert not _alive(pid)


def test_when_preloading_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUOPT_PRELOAD", raising=False)
    on = {"GPUOPT_PRELOAD": "1"}
    assert not preload_ok(None, None, {})  # only when asked
    assert preload_ok(None, None, on) and preload_ok("/usr/bin/python3", "", on)
    assert not preload_ok(None, "srun -N1 --gpus=1", on)  # the run must start where srun puts it
    assert not preload_ok("uv run python", None, on)  # a wrapper, not an interpreter
    assert not preload_ok(None, None, {"GPUOPT_PRELOAD": "0"})
    monkeypatch.setenv("GPUOPT_PRELOAD", "yes")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert preload_ok(None, None)  # gpuopt's own environment asks for every workload


def test_the_torch_worker_runs_forked_with_torch_already_imported(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "problem.py").write_text(
        "import sys, torch\n"
        "from torch import nn\n"
        "print('torch was there before the problem', file=sys.stderr)\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * 2\n"
        "def get_inputs():\n"
        "    return [torch.ones(64)]\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    env = dict(os.environ, OMP_NUM_THREADS="1", GPUOPT_TORCH_MIN_TIME="0.01")
    with PreloadedPython(sys.executable, ["torch"], env=env) as srv:
        args = worker_script_args("time", "kernelbench", "problem.py")
        r = srv.run(args, tmp_path, env=env, metric_source="json", metric_pattern="gpuopt_value")
        assert r.status == "ok", r.error or r.stderr_tail
        assert r.value is not None and r.value > 0
        line = json.loads(r.stdout_tail.strip().splitlines()[-1])
        assert line["device"] == "cpu" and line["samples"] >= 1
    assert preload.SERVER.exists()


def test_a_run_ends_as_an_interpreter_would(tmp_path: Path, server) -> None:
    """Non-daemon threads are waited for and atexit functions run, as at a normal exit."""
    job = _script(
        tmp_path,
        "import atexit, threading, time\n"
        "atexit.register(lambda: print('atexit ran', flush=True))\n"
        "def late():\n"
        "    time.sleep(0.2)\n"
        "    print('thread done', flush=True)\n"
        "threading.Thread(target=late).start()\n"
        "print('main done', flush=True)\n",
    )
    r = server.run([str(job)], tmp_path, env={})
    assert r.ok, r.error
    assert r.stdout_tail.splitlines() == ["main done", "thread done", "atexit ran"]


def test_a_run_cut_short_leaves_the_server_unusable(tmp_path: Path, server) -> None:
    """Ctrl+C mid-run: the child is killed and the server is never asked again (its late
    answer would be read as the next run's)."""
    pidfile = tmp_path / "child.pid"
    job = _script(
        tmp_path,
        f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\ntime.sleep(100)\n",
    )

    def interrupt(pid: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        server.run([str(job)], tmp_path, env={}, on_start=interrupt)
    with pytest.raises(PreloadError, match="out of step"):
        server.run([str(_script(tmp_path, "pass", "p.py"))], tmp_path, env={})


def _waiting_child(server: PreloadedPython) -> int:
    """The pid of the child the server forked in advance (waiting for its request)."""
    children = Path(f"/proc/{server.proc.pid}/task/{server.proc.pid}/children")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # it forks right after answering for the last run
        kids = children.read_text().split()
        if kids:
            assert len(kids) == 1
            return int(kids[0])
        time.sleep(0.01)
    raise AssertionError("the server forked no waiting child")


def test_a_waiting_child_that_dies_cannot_pass_its_end_for_a_run(tmp_path: Path, server) -> None:
    job = _script(tmp_path, "import sys; print('{\"v\": %s}' % sys.argv[1])")
    first = server.run([str(job), "1"], tmp_path, env={}, metric_source="json", metric_pattern="v")
    assert first.value == 1
    waiting = _waiting_child(server)
    os.kill(waiting, 9)  # the OOM killer, a stray pkill, while it waits
    assert _gone_within(waiting, 5.0)
    # (Killed at the very moment it takes a request, it takes the request with it: then
    # the run raises PreloadError after ANSWER_TIMEOUT_S and the engine spawns it.)
    for i in (2, 3):
        r = server.run(
            [str(job), str(i)], tmp_path, env={}, metric_source="json", metric_pattern="v"
        )
        assert r.status == "ok" and r.value == i, (r.status, r.error)


def test_exit_75_and_interrupts_are_the_scripts_own(tmp_path: Path, server) -> None:
    r = server.run([str(_script(tmp_path, "raise SystemExit(75)", "s75.py"))], tmp_path, env={})
    assert r.status == "failed" and r.exit_code == 75 and server.alive
    r = server.run([str(_script(tmp_path, "raise KeyboardInterrupt", "ki.py"))], tmp_path, env={})
    assert r.exit_code == -2 and "KeyboardInterrupt" in r.stderr_tail  # as python does
    r = server.run([str(tmp_path / "missing.py")], tmp_path, env={})
    assert r.exit_code == 2 and "can't open file" in r.error
    r = server.run([str(_script(tmp_path, "pass", "p.py"))], tmp_path / "nowhere", env={})
    assert r.exit_code == 2 and "cannot enter" in r.error
    assert server.run([str(_script(tmp_path, "pass", "p.py"))], tmp_path, env={}).ok


def test_a_large_environment_is_read_at_once_and_the_timeout_reaches_it(
    tmp_path: Path, server
) -> None:
    env = {f"V{i}": "x" * 1000 for i in range(2000)}  # 2 MB of environment
    job = _script(tmp_path, "import os; print(len(os.environ))")
    r = server.run([str(job)], tmp_path, env=env)
    assert r.ok and int(r.stdout_tail) >= 2000 and r.wall_s < 5
    slow = _script(tmp_path, "import time; time.sleep(100)", "slow.py")
    t0 = time.perf_counter()
    r = server.run([str(slow)], tmp_path, env=env, timeout_s=1.0)
    assert r.status == "timeout" and time.perf_counter() - t0 < 10


def test_a_relative_pythonpath_is_not_preloaded() -> None:
    on = {"GPUOPT_PRELOAD": "1"}
    assert preload_ok(None, None, {**on, "PYTHONPATH": "/abs/src"})
    assert not preload_ok(None, None, {**on, "PYTHONPATH": "src"})
    assert not preload_ok(None, None, {**on, "PYTHONPATH": "/abs::/other"})  # empty: the cwd
