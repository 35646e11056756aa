"""A preloaded interpreter: imports heavy modules once, then forks one process per run.

Run by path with the contract's interpreter (standard library only, like the torch
worker): `python -B preload_server.py MODULE...`. It imports the modules, prints one JSON
line saying it is ready, then serves requests, one JSON line each on stdin:

    {"id": N, "argv": [SCRIPT, ARG...], "cwd": DIR, "env": {...}, "out": FILE, "err": FILE}

A child forked in advance starts a new session, takes the request, says
`{"started": N, "pid": PID}`, moves to `cwd`, takes `env` as its whole environment,
writes stdout and stderr to the two files and runs SCRIPT as `__main__`. When it has
exited, the server kills what it left in its process group and, as their subreaper,
every other process the run left (`setsid` ones too), and answers
`{"done": PID, "status": WAIT_STATUS, "utime": S, "stime": S, "maxrss_kib": N}`.

Why: importing torch costs about 2 s of CPU per process (more on some machines), and
every replicate is a process of its own. A forked child starts with torch imported but
never used: no CUDA context, no thread pool started (torch's own DataLoader workers are
made the same way). Each child is still one fresh process, so replicates stay independent.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import importlib
import json
import os
import random
import resource
import runpy
import select
import signal
import sys
import threading
import time
import traceback


def _own_peak_kib() -> int:
    """Our memory's own high-water (VmHWM), the floor of a forked child's peak; ru_maxrss
    would add the peak our exec inherited from gpuopt (measure/peak_rss.py says why)."""
    with open("/proc/self/status", encoding="ascii") as f:
        hwm = [int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")]
    return hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _answer(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _unsafe_to_fork() -> str:
    """Why forking now would hand the child a used runtime ("" when it is safe)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_initialized():
                return "CUDA was initialized while importing"
        except Exception:  # an exotic build without torch.cuda: nothing was started there
            pass
    return ""


def _run_script(request: dict) -> int:
    """In the child, its output already redirected: run the script; its exit status."""
    try:
        os.chdir(request["cwd"])
    except OSError as exc:
        print(f"gpuopt: cannot enter {request['cwd']}: {exc.strerror}", file=sys.stderr)
        return 2
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ["PWD"] = os.getcwd()  # as a shell would set it in the worktree
    # A fresh process would have drawn its own seeds: so does each child.
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    script = request["argv"][0]
    if not os.path.isfile(script):
        print(f"{sys.executable}: can't open file {script!r}", file=sys.stderr)
        return 2
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    try:
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT  # as Python does: it ends itself with SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    return _finish_like_an_interpreter(code)


def _child() -> None:
    """In the forked child: read the request, announce it, become the run. Never returns."""
    code = 1
    try:
        # A group of its own first: from here a timeout's killpg reaches it, even while
        # it is still reading its request.
        os.setsid()
        _die_with(os.getppid())
        try:
            request = _read_request()
        except ValueError:
            os._exit(2)
        if request is None:
            os._exit(EXIT_ON_EOF)
        # Straight to the client, on the pipe it reads the server's answers from: which
        # request this process serves. One write, shorter than PIPE_BUF: never interleaved.
        os.write(1, (json.dumps({"started": request["id"], "pid": os.getpid()}) + "\n").encode())
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (null, out, err):
            os.close(fd)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        code = _run_script(request)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            if code < 0:  # end by the signal, as the interpreter would
                signal.signal(-code, signal.SIG_DFL)
                os.kill(os.getpid(), -code)
            os._exit(code & 0xFF)


_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36


def _prctl(option: int, value: int) -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _die_with(parent: int) -> None:
    """In the child: end when the server ends (it forked from a single thread, so the
    death of that thread is the server's), even if that happened a moment ago."""
    if _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) and os.getppid() != parent:
        os._exit(1)


def _children() -> list[int]:
    me = os.getpid()
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{tid}/children", "rb") as f:
                out.extend(int(p) for p in f.read().split())
    except OSError:
        pass
    return out


def _kill_leftovers(run: int, timeout_s: float = 2.0) -> None:
    """As the subreaper of the runs: every child but the run (a zombie still) is what it
    left, `setsid` or not. Kill and reap them until none is left."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        others = [p for p in _children() if p != run]
        if not others:
            return
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in others:  # reaped, its own children are ours: the next pass takes them
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.002)


def _finish_like_an_interpreter(code: int) -> int:
    """What Python does at exit, which os._exit skips: wait for the script's non-daemon
    threads, then run the atexit functions (a workload may write its results there)."""
    try:
        threading._shutdown()  # type: ignore[attr-defined]
    except BaseException:
        traceback.print_exc()
    try:
        atexit._run_exitfuncs()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    return code


EXIT_ON_EOF = 75  # a waiting child that found the input closed
SUBREAPER = False  # set in main: this server collects what its runs leave


def _read_request() -> dict | None:
    """In the child: one request line from the server's input (None at EOF). The client
    sends the next request only after this run's answer, so nothing is read past it."""
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk = os.read(0, 65536)
        if not chunk:
            return None
        data += chunk
    return json.loads(data)


def _input_closed() -> bool:
    poller = select.poll()
    poller.register(0, select.POLLIN | select.POLLHUP)
    return any(ev & select.POLLHUP for _, ev in poller.poll(0))


def _serve_one() -> bool:
    """Fork a child, which then reads its request; answer for it. False: time to stop.

    The fork comes before the request is read, so that every child starts from the same
    state of this process whatever the requests said: on a CPU the speed of a run can
    hang on where its memory lands, and nothing here should move it from run to run.
    The child says which request it took ({"started": ID, "pid": PID}); the server's
    answer names the pid, so an answer for a child that died before taking a request
    (the OOM killer, a stray pkill) can never pass for another run's.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child()
    # Peek at the exit first: the zombie keeps the group id, so the leftovers of the
    # run can be killed before the id can be reused; then reap it for its resources.
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if SUBREAPER:
        _kill_leftovers(pid)
    _, status, usage = os.wait4(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == EXIT_ON_EOF and _input_closed():
        return False
    _answer(
        {
            "done": pid,
            "status": status,
            "utime": usage.ru_utime,
            "stime": usage.ru_stime,
            "maxrss_kib": usage.ru_maxrss,
        }
    )
    return True


def main(modules: list[str]) -> int:
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException as exc:
            _answer({"ready": False, "error": f"importing {name} failed: {exc!r}"})
            return 1
    why = _unsafe_to_fork()
    if why:
        _answer({"ready": False, "error": why})
        return 1
    gc.collect()
    gc.freeze()  # keep the imported objects' pages shared with the children
    own = _own_peak_kib()
    global SUBREAPER
    SUBREAPER = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _answer({"ready": True, "pid": os.getpid(), "maxrss_kib": own, "python": sys.version,
             "subreaper": SUBREAPER})  # fmt: skip
    while _serve_one():
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
