"""Per-run overhead of gpuopt's runner against hyperfine, on `true` and `sleep 0.1`.

    PYTHONPATH=. python tests/benchmarks/overhead.py [--runs 50]

gpuopt always runs `bash -c CMD`, so the fair reference is hyperfine timing the same
process tree with its output read through a pipe, as gpuopt reads it:
`hyperfine -N --output=pipe "bash -c CMD"`. Also printed: hyperfine on the bare command
(`-N CMD`: no shell at all, so the difference includes bash's own start) and hyperfine's
default shell mode with `--shell=bash` (which subtracts its measured shell start-up time).
The arms take turns in chunks of 10 runs, in a fresh random order per turn, so that a
change of load hits all of them alike. "Added" = gpuopt's median wall time minus the
reference's median. "Whole Python call" is the time the call to run_command takes in all
(spawn, reads, reap, result), which bounds how fast runs can follow each other.

Not a pytest module. On a shared machine the figures move with the load (printed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from measure.runner import run_command

COMMANDS = ["true", "sleep 0.1"]


def gpuopt_times(command: str, runs: int) -> tuple[list[float], list[float]]:
    cwd = tempfile.gettempdir()
    walls, calls = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = run_command(command, cwd)
        calls.append(time.perf_counter() - t0)
        assert r.status == "ok", r.error
        walls.append(r.wall_s)
    return walls, calls


def hyperfine_times(args: list[str], runs: int) -> list[float]:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = ["hyperfine", "--style", "none", "--warmup", "1", "--runs", str(runs)]
        cmd += ["--export-json", f.name, *args]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"hyperfine failed: {proc.stderr.strip()[:200]}")
        return [float(t) for t in json.loads(Path(f.name).read_text())["results"][0]["times"]]


def ms(x: float) -> str:
    return f"{x * 1000:8.3f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=10, help="runs per arm per turn")
    args = ap.parse_args()
    have_hf = shutil.which("hyperfine") is not None
    print(f"load average before: {os.getloadavg()}   cpus: {os.cpu_count()}")
    if not have_hf:
        print("hyperfine is not installed: printing gpuopt's figures only")
    rng = random.Random(0)
    for command in COMMANDS:
        print(f"\n== {command!r}: {args.runs} runs each, interleaved in chunks of {args.chunk}")
        arms: dict[str, list[str] | None] = {"gpuopt": None}
        if have_hf:
            fair = ["-N", "--output=pipe", f"bash -c {shlex.quote(command)}"]
            arms["hyperfine -N --output=pipe 'bash -c CMD'"] = fair
            arms["hyperfine -N CMD (no shell)"] = ["-N", command]
            arms["hyperfine --shell=bash CMD"] = ["--shell=bash", command]
        times: dict[str, list[float]] = {a: [] for a in arms}
        calls: list[float] = []
        gpuopt_times(command, args.warmup)
        for _ in range(max(1, args.runs // args.chunk)):
            for arm in rng.sample(list(arms), len(arms)):
                hf_args = arms[arm]
                if hf_args is None:
                    walls, c = gpuopt_times(command, args.chunk)
                    times[arm] += walls
                    calls += c
                else:
                    times[arm] += hyperfine_times(hf_args, args.chunk)
        g_med = statistics.median(times["gpuopt"])
        print(
            f"  {'gpuopt runner (bash -c)':<42} median {ms(g_med)}"
            f"  mean {ms(statistics.fmean(times['gpuopt']))}"
        )
        print(f"  {'gpuopt whole Python call':<42} median {ms(statistics.median(calls))}")
        for label in list(arms)[1:]:
            med = statistics.median(times[label])
            added = g_med - med
            pct = f"{100 * added / med:+6.2f} %" if med > 0 else "   n/a"
            print(
                f"  {label:<42} median {ms(med)}  mean {ms(statistics.fmean(times[label]))}"
                f"   gpuopt adds {added * 1000:+7.3f} ms ({pct})"
            )
    print(f"\nload average after: {os.getloadavg()}")
    print("target: <= 2 ms added per run against the fair reference, <= 1 % on 'sleep 0.1'")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
