"""The whole suite's size and wall time here: the figures the README's Development section
gives, recorded in docs/measured.json ("suite") with `--record`.

    .venv/bin/python -m tests.benchmarks.suite_time [--workers 4] [--record]

Runs `python -m pytest -n WORKERS -q` from the repository root, as the README says to, and
takes the passed/failed/skipped counts from pytest's last line. Run it on a machine at rest
(the load average before and after is recorded beside the time).

Also recorded: the CPU time the run used (pytest, its workers and every process they
waited for), and how fast this machine runs Python (`python_probe_ms`: a fixed loop, best
of five, before and after the run). Wall time on N cores cannot go below the CPU time
over N. The same suite took 404 s on one 2-core VM and 847 s on another: these figures
say which kind of machine a wall time came from, and how far a run is from its floor.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
import timeit

from tests.benchmarks.demo_time import ROOT, record


def counts(last_line: str) -> dict[str, int]:
    """'6 failed, 1072 passed, 3 skipped in 1560.2s' -> {'failed': 6, 'passed': 1072, ...}"""
    return {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)", last_line)}


def python_probe_ms() -> int:
    """A fixed pure-Python loop, in ms (best of five): how fast this machine runs Python.
    A shared VM's speed wanders (183-308 ms within a minute on one), so it is taken
    before and after the suite."""
    loop = "sum(i * i for i in range(3_000_000))"
    return round(min(timeit.repeat(loop, number=1, repeat=5)) * 1000)


def children_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=4, help="pytest-xdist workers (4)")
    p.add_argument("--record", action="store_true", help="write the result to docs/measured.json")
    args = p.parse_args()
    argv = [sys.executable, "-m", "pytest", "-n", str(args.workers), "-q", "-p", "no:cacheprovider"]
    probe0 = python_probe_ms()
    load0 = os.getloadavg()[0]
    cpu0 = children_cpu_s()
    t0 = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    cpu = children_cpu_s() - cpu0
    last = (done.stdout.strip().splitlines() or [""])[-1]
    found = counts(last)
    result = {"command": "python -m tests.benchmarks.suite_time --record",
              "workers": args.workers, "wall_s": round(wall), "exit": done.returncode,
              "tests": sum(found.values()), **found, "load_before": round(load0, 2),
              "load_after": round(os.getloadavg()[0], 2), "cpu_s": round(cpu),
              "python_probe_ms": [probe0, python_probe_ms()]}  # fmt: skip
    for line in done.stdout.splitlines():  # what failed, so a red run says what to look at
        if line.startswith(("FAILED ", "ERROR ")):
            print(line, flush=True)
    print(result, flush=True)
    if args.record:
        record("suite", result)


if __name__ == "__main__":
    main()
