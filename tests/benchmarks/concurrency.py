"""Overlapping rounds and writers on one ledger; prints each run and the total (a script,
not a pytest test).

    .venv/bin/python -m tests.benchmarks.concurrency [--runs N] [--blocks B]

Each run is one real `gpuopt round` with telemetry on (its process holds two openings of
the ledger: the engine's and the telemetry sink's) while a second process writes sessions,
hypotheses and telemetry to the same ledger in a loop and is killed -9 mid-transaction at
the end. After each run SQLite's `PRAGMA integrity_check` must say "ok".
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from tests.ledger.overlap import overlap_once, prepare


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--blocks", type=int, default=4)
    args = parser.parse_args()
    damaged = 0
    total_problems = 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            where = Path(tmp) / f"run{i}"
            path, sid = prepare(where)
            started = time.monotonic()
            code, problems = overlap_once(path, sid, f"w{i}", blocks=args.blocks)
            damaged += bool(problems)
            total_problems += len(problems)
            first = problems[0][:100] if problems else "ok"
            print(
                f"run {i + 1:3d}/{args.runs}: round exit {code}, {len(problems)} integrity "
                f"problems, {time.monotonic() - started:5.1f} s  ({first})",
                flush=True,
            )
    print(
        f"\n{args.runs} overlapping runs of a round with telemetry beside a looping writer: "
        f"{damaged} damaged, {total_problems} integrity problems in all "
        f"({time.monotonic() - t0:.0f} s)"
    )
    return 1 if damaged else 0


if __name__ == "__main__":
    sys.exit(main())
