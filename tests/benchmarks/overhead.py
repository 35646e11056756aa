"""Per-run overhead of gpuopt's runner against hyperfine, on `true` and `sleep 0.1`.

    PYTHONPATH=. python tests/benchmarks/overhead.py [--runs 50]

gpuopt always runs `bash -c CMD`, so the fair reference is hyperfine timing the same
process tree: `hyperfine -N "bash -c CMD"`. Also printed: hyperfine on the bare command
(`-N CMD`: no shell at all, so the difference includes bash's own start) and hyperfine's
default shell mode with `--shell=bash` (which subtracts its measured shell start-up time).
"Added" = gpuopt's median wall time minus the fair reference's median. "call" is the time
the Python call takes in all (spawn, reads, reap, result), which bounds throughput.

Not a pytest module. On a shared machine the figures move with the load (printed).
"""

from __future__ import annotations

import argparse
import json
import os
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


def gpuopt_times(command: str, runs: int, warmup: int) -> tuple[list[float], list[float]]:
    cwd = tempfile.gettempdir()
    for _ in range(warmup):
        run_command(command, cwd)
    walls, calls = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = run_command(command, cwd)
        calls.append(time.perf_counter() - t0)
        assert r.status == "ok", r.error
        walls.append(r.wall_s)
    return walls, calls


def hyperfine(args: list[str], runs: int, warmup: int) -> dict[str, float] | None:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = ["hyperfine", "--style", "none", "--warmup", str(warmup), "--runs", str(runs)]
        cmd += ["--export-json", f.name, *args]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"  hyperfine failed: {proc.stderr.strip()[:200]}")
            return None
        res = json.loads(Path(f.name).read_text())["results"][0]
    return {"mean": res["mean"], "median": res["median"]}


def ms(x: float) -> str:
    return f"{x * 1000:8.3f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    have_hf = shutil.which("hyperfine") is not None
    print(f"load average before: {os.getloadavg()}   cpus: {os.cpu_count()}")
    if not have_hf:
        print("hyperfine is not installed: printing gpuopt's figures only")
    for command in COMMANDS:
        print(f"\n== {command!r}: {args.runs} runs, {args.warmup} warm-up")
        walls, calls = gpuopt_times(command, args.runs, args.warmup)
        g_med, g_mean = statistics.median(walls), statistics.fmean(walls)
        print(f"  gpuopt runner (bash -c)       median {ms(g_med)}  mean {ms(g_mean)}")
        print(f"  gpuopt whole call             median {ms(statistics.median(calls))}")
        if not have_hf:
            continue
        fair = hyperfine(["-N", f"bash -c {shlex.quote(command)}"], args.runs, args.warmup)
        bare = hyperfine(["-N", command], args.runs, args.warmup)
        shell = hyperfine(["--shell=bash", command], args.runs, args.warmup)
        rows = [
            ("hyperfine -N 'bash -c CMD'", fair),
            ("hyperfine -N CMD (no shell)", bare),
            ("hyperfine --shell=bash CMD", shell),
        ]
        for label, res in rows:
            if res is None:
                continue
            added = g_med - res["median"]
            pct = f"{100 * added / res['median']:+6.2f} %" if res["median"] > 0 else "   n/a"
            print(
                f"  {label:<29} median {ms(res['median'])}  mean {ms(res['mean'])}"
                f"   gpuopt adds {added * 1000:+7.3f} ms ({pct})"
            )
    print(f"\nload average after: {os.getloadavg()}")
    print("target: <= 2 ms added per run against the fair reference, <= 1 % on 'sleep 0.1'")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
