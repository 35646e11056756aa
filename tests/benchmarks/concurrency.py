"""Overlapping rounds and writers on one ledger; prints each run and the total (a script,
not a pytest test).

    .venv/bin/python -m tests.benchmarks.concurrency [--runs N] [--blocks B] [--pairs P]

Each run is one real `gpuopt round` with telemetry on (its process holds two openings of
the ledger: the engine's and the telemetry sink's) while a second process writes sessions,
hypotheses and telemetry to the same ledger in a loop and is killed -9 mid-transaction at
the end. After each run SQLite's `PRAGMA integrity_check` must say "ok".

Then the lost-update trial: P pairs of concurrent `gpuopt` edits of one hypothesis
(different fields; a status beside an edit; the same field), released together while
both wait on the write lock. Printed: edits a writer was told are saved that the row does
not hold (lost), rows whose history disagrees with their value, and same-field pairs that
did not refuse exactly one writer with exit 2. All three must be 0.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from tests.ledger import lost_updates as lu
from tests.ledger.overlap import overlap_once, prepare

PAIRS = (
    (("--symptom", "A"), ("--mechanism", "B")),
    (("--status", "supported"), ("--falsifier", "F")),
    (("--symptom", "A"), ("--symptom", "B")),
)


def _command(sid: str, hid: str, option: tuple[str, str], i: int) -> tuple[list[str], str]:
    flag, value = option
    value = f"{value}{i}" if flag != "--status" else value
    verb = "status" if flag == "--status" else "edit"
    return ["hypothesis", verb, sid, hid, flag, value, "--why", f"w{i}"], value


def lost_update_trial(pairs: int, tmp: Path) -> int:
    """P pairs of concurrent edits; prints each and the totals; returns the failures."""
    lost = disagree = wrong_refusals = 0
    t0 = time.monotonic()
    for i in range(pairs):
        path = tmp / f"edits{i}.db"
        sid, hid = lu.prepare(path)
        a, b = PAIRS[i % len(PAIRS)]
        (cmd_a, val_a), (cmd_b, val_b) = _command(sid, hid, a, i), _command(sid, hid, b, i)
        out = lu.edit_together(path, cmd_a, cmd_b)
        same_field = a[0] == b[0]
        told: dict[str, str] = {}
        for code, option, value in zip(out.codes, (a, b), (val_a, val_b), strict=True):
            if code == 0:
                told[option[0].removeprefix("--").replace("-", "_")] = value
        bad_refusal = sorted(out.codes) != ([0, 2] if same_field else [0, 0])
        kept = lu.check_hypothesis(path, hid, told)
        lost += len(kept.lost)
        disagree += bool(kept.disagree)
        wrong_refusals += bad_refusal
        print(
            f"pair {i + 1:3d}/{pairs}: {a[0]} + {b[0]}: exits {out.codes}, "
            f"{len(kept.lost)} lost, {len(kept.disagree)} disagree"
            + (" (refusal wrong)" if bad_refusal else ""),
            flush=True,
        )
    print(
        f"\n{pairs} pairs of concurrent gpuopt edits of one hypothesis: {lost} lost, "
        f"{disagree} rows whose history and value disagree, {wrong_refusals} pairs refused "
        f"wrongly ({time.monotonic() - t0:.0f} s)"
    )
    return lost + disagree + wrong_refusals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=51, help="pairs of concurrent edits")
    args = parser.parse_args()
    damaged = 0
    total_problems = 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        failed_edits = lost_update_trial(args.pairs, Path(tmp)) if args.pairs else 0
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
    return 1 if damaged or failed_edits else 0


if __name__ == "__main__":
    sys.exit(main())
