"""How long `gpuopt demo --no-tui` takes here, at its defaults: the figure the README gives.

    .venv/bin/python -m tests.benchmarks.demo_time [--times 1] [--record]

Prints, per run: wall seconds, the load average before and after (a shared CPU's load is
most of the spread), the exit status, the number of processes measured (baseline runs and
round runs, warm-ups included) and the verdicts the demo reached. Each run starts from a
fresh temporary repository, ledger and worktree folder. `--record` writes the runs to
docs/measured.json ("demo"), the file the README's demo time is held to
(tests/test_readme_defaults.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEASURED = ROOT / "docs" / "measured.json"


def record(key: str, result: dict[str, object]) -> None:
    """Put one benchmark's result in docs/measured.json, with the commit it ran at."""
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    stamp = {"commit": done.stdout.strip(), "date": time.strftime("%Y-%m-%d", time.gmtime()),
             "cpus": os.cpu_count()}  # fmt: skip
    measured = json.loads(MEASURED.read_text(encoding="utf-8")) if MEASURED.exists() else {}
    measured[key] = {**stamp, **result}
    MEASURED.write_text(json.dumps(measured, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"recorded in {MEASURED.relative_to(ROOT)} ({key})", flush=True)


def one_run() -> dict[str, object]:
    from ledger import Ledger
    from session import models as m
    from session.verdicts import shown_verdict

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
            checks = ledger.list(m.CorrectnessResult)
            rounds = {r.id: r for r in ledger.list(m.Round)}
            # as the demo says them: a failed check reads BROKEN, not its speed verdict
            verdicts = {names.get(c.variant_id, "?"):
                        shown_verdict(c, checks, rounds.get(c.round_id)).word
                        for c in ledger.list(m.Comparison)}  # fmt: skip
        return {"wall_s": round(wall, 1), "load_before": round(load0, 2),
                "load_after": round(os.getloadavg()[0], 2), "exit": done.returncode,
                "processes": runs, "verdicts": verdicts,
                "last_line": done.stderr.strip().splitlines()[-1:]}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--times", type=int, default=1, help="how many demos to time (1)")
    p.add_argument("--record", action="store_true", help="write the runs to docs/measured.json")
    args = p.parse_args()
    print(f"gpuopt demo --no-tui on {os.cpu_count()} CPUs")
    runs = []
    for i in range(args.times):
        runs.append(one_run())
        print(f"run {i + 1}: {runs[-1]}", flush=True)
    if args.record:
        keep = ("wall_s", "load_before", "load_after", "exit", "processes", "verdicts")
        record("demo", {"command": "python -m tests.benchmarks.demo_time --record",
                        "runs": [{k: r[k] for k in keep} for r in runs]})  # fmt: skip


if __name__ == "__main__":
    main()
