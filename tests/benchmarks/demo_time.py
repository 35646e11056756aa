"""How long `gpuopt demo --no-tui` takes here, at its defaults: the figure the README gives.

    .venv/bin/python -m tests.benchmarks.demo_time [--times 1]

Prints, per run: wall seconds, the load average before and after (a shared CPU's load is
most of the spread), the exit status, the number of processes measured (baseline runs and
round runs, warm-ups included) and the verdicts the demo reached. Each run starts from a
fresh temporary repository, ledger and worktree folder.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def one_run() -> dict[str, object]:
    from ledger import Ledger
    from session import models as m

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUOPT_WORKTREES": str(base / "wt")}
        argv = [sys.executable, "-m", "tui", "--ledger", str(base / "l.db"), "demo",
                "--no-tui", "--dir", str(base / "demo")]  # fmt: skip
        load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT)
        wall = time.monotonic() - t0
        with Ledger.open(base / "l.db", readonly=True) as ledger:
            runs = len(ledger.list(m.Run))
            names = {v.id: v.name for v in ledger.list(m.Variant)}
            verdicts = {names.get(c.variant_id, "?"): c.verdict.value
                        for c in ledger.list(m.Comparison)}  # fmt: skip
        return {"wall_s": round(wall, 1), "load_before": round(load0, 2),
                "load_after": round(os.getloadavg()[0], 2), "exit": done.returncode,
                "processes": runs, "verdicts": verdicts,
                "last_line": done.stderr.strip().splitlines()[-1:]}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--times", type=int, default=1, help="how many demos to time (1)")
    args = p.parse_args()
    print(f"gpuopt demo --no-tui on {os.cpu_count()} CPUs")
    for i in range(args.times):
        print(f"run {i + 1}: {one_run()}", flush=True)


if __name__ == "__main__":
    main()
