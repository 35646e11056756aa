"""Whether the interpreter that runs torch workloads has torch, said with what to install.

gpuopt's own process never imports torch; the demo's workload and every torch workload run
under the contract's interpreter (by default the one gpuopt runs in), which needs the torch
extra. Asking first turns two dozen failed runs into one line that says what to do.
"""

from __future__ import annotations

import subprocess
import sys

from measure.interpreter import missing_modules

__all__ = ["INSTALL_TORCH", "torch_missing"]

INSTALL_TORCH = (
    "install the torch extra: pip install 'gpuopt[torch]' (from a checkout: "
    "pip install -c constraints.txt -e '.[torch]'); on a machine without a GPU add "
    "--extra-index-url https://download.pytorch.org/whl/cpu to take the CPU build"
)


def torch_missing(python: str | None = None) -> str | None:
    """None when `python` (default: this interpreter) can import torch; else one line for
    the person: what is missing and what to install."""
    python = python or sys.executable
    try:
        missing = missing_modules(python, ["torch"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot ask {python} whether it has torch ({exc})"
    if not missing:
        return None
    return f"{python} has no torch, which torch workloads need: {INSTALL_TORCH}"
