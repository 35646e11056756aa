"""What another Python interpreter can import, asked without importing anything in ours.

Torch workloads run under the contract's interpreter, not gpuopt's; before a session sends
dozens of runs there, it can ask once whether torch is there at all.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Sequence

__all__ = ["missing_modules"]

# find_spec finds a module without importing it (torch's import takes seconds).
_PROBE = (
    "import importlib.util, json, sys\n"
    "print(json.dumps([n for n in sys.argv[1:] if importlib.util.find_spec(n) is None]))\n"
)


def missing_modules(python: str, names: Sequence[str], timeout_s: float = 60.0) -> list[str]:
    """The modules of `names` that `python` cannot find. `python` may be a command with
    arguments ("uv run python"). OSError when the interpreter does not start or answer,
    subprocess.TimeoutExpired when it hangs."""
    argv = [*shlex.split(python), "-c", _PROBE, *names]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise OSError(f"{python} did not answer (exit {proc.returncode}): {tail}")
    return [str(n) for n in json.loads(lines[-1])]
