"""A preloaded interpreter: imports heavy modules once, then forks one process per run.

Run by path with the contract's interpreter (standard library only, like the torch
worker): `python -B preload_server.py MODULE...`. It imports the modules, prints one JSON
line saying it is ready, then serves requests, one JSON line each on stdin:

    {"argv": [SCRIPT, ARG...], "cwd": DIR, "env": {...}, "out": FILE, "err": FILE}

For each it forks a child that starts a new session, moves to `cwd`, takes `env` as its
whole environment, writes stdout and stderr to the two files and runs SCRIPT as
`__main__`. The server answers `{"pid": PID}` at once and, when the child has exited,
kills what the child left in its process group and answers
`{"status": WAIT_STATUS, "utime": S, "stime": S, "maxrss_kib": N}`.

Why: importing torch costs about 2 s of CPU per process (more on some machines), and
every replicate is a process of its own. A forked child starts with torch imported but
never used: no CUDA context, no thread pool started (torch's own DataLoader workers are
made the same way). Each child is still one fresh process, so replicates stay independent.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import random
import runpy
import signal
import sys
import traceback


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


def _child(request: dict) -> None:
    """In the forked child: become the run. Never returns."""
    code = 1
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (null, out, err):
            os.close(fd)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # A fresh process would have drawn its own seeds: so does each child.
        random.seed()
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed()
        script = request["argv"][0]
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
        except BaseException:
            traceback.print_exc()
            code = 1
        code = _finish_like_an_interpreter(code)
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xFF)


def _finish_like_an_interpreter(code: int) -> int:
    """What Python does at exit, which os._exit skips: wait for the script's non-daemon
    threads, then run the atexit functions (a workload may write its results there)."""
    import atexit
    import threading

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


EXIT_ON_EOF = 75  # a child that found the input closed: the server's cue to stop


def _read_request() -> dict | None:
    """In the child: one request line from the server's input, unbuffered (None at EOF)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(0, 1)
        if not chunk:
            return None
        data += chunk
    return json.loads(data)


def _serve_one() -> bool:
    """Fork a child, which then reads its request; answer for it. False: time to stop.

    The fork comes before the request is read, so that every child starts from the same
    state of this process whatever the requests said: on a CPU the speed of a run can
    hang on where its memory lands, and nothing here should move it from run to run.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            request = _read_request()
        except ValueError:
            os._exit(2)
        if request is None:
            os._exit(EXIT_ON_EOF)
        _child(request)
    _answer({"pid": pid})
    # Peek at the exit first: the zombie keeps the group id, so the leftovers of the
    # run can be killed before the id can be reused; then reap it for its resources.
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _, status, usage = os.wait4(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == EXIT_ON_EOF:
        return False
    _answer(
        {
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
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    _answer({"ready": True, "pid": os.getpid(), "maxrss_kib": own, "python": sys.version})
    while _serve_one():
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
