"""`gpuopt compare` beside hyperfine on the same pair of commands: false verdicts and power.

    .venv/bin/python -m tests.benchmarks.compare_vs_hyperfine [--trials 20] [--ms 100]

The pair is a Python busy loop run with this interpreter's own path (never a pyenv shim),
calibrated to about --ms milliseconds, against itself (A/A) and against enough more
iterations for 5% more wall time (the interpreter's start is calibrated out). Each trial
runs `gpuopt compare` through its command line with --export-json, and, when hyperfine is
installed, `hyperfine --export-json` on the same pair (its defaults: at least 10 runs, no
interleaving). For hyperfine a verdict is read
two ways: the ratio of means beyond ±2% ("the ±2% ratio rule"), and Welch's t-test at 5%.

Printed: per tool, the A/A false verdicts (any verdict that is not SAME/no change) and the
share of 5% changes found (SLOWER), with the median runs per command. Not a pytest module.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BAND = 0.02


def loop_command(n: int) -> str:
    return f"{sys.executable} -c 'i=0\nwhile i<{n}: i+=1'"


def _wall(n: int, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"i=0\nwhile i<{n}: i+=1"], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def calibrate(ms: float) -> tuple[int, int]:
    """Iterations for about `ms` in all, and for 5% more wall time (the interpreter's
    start is a fixed cost: 5% more iterations would be less than 5% more time)."""
    lo, hi = 100_000, 400_000
    t_lo, t_hi = _wall(lo), _wall(hi)
    per = (t_hi - t_lo) / (hi - lo)
    start = max(0.0, t_lo - per * lo)
    n = max(10_000, int((ms / 1000 - start) / per))
    more = n + int(0.05 * (start + per * n) / per)
    return n, more


def gpuopt_trial(a: str, b: str, out: Path) -> tuple[str, int]:
    gpuopt = [sys.executable, "-m", "tui.cli"]
    subprocess.run(
        [*gpuopt, "compare", a, b, "--export-json", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    doc = json.loads(out.read_text())
    (cmp,) = doc["gpuopt"]["comparisons"]
    return cmp["verdict"], len(doc["results"][0]["times"])


def welch_p(x: list[float], y: list[float]) -> float:
    mx, my = statistics.fmean(x), statistics.fmean(y)
    vx, vy = statistics.variance(x) / len(x), statistics.variance(y) / len(y)
    t = (my - mx) / math.sqrt(vx + vy)
    # normal approximation of the t distribution: enough to count rejections at 5%
    return 2 * (1 - statistics.NormalDist().cdf(abs(t)))


def hyperfine_trial(a: str, b: str, out: Path) -> tuple[str, str, int]:
    subprocess.run(
        ["hyperfine", "--style", "none", "--export-json", str(out), a, b],
        check=True,
        capture_output=True,
    )
    doc = json.loads(out.read_text())
    ta, tb = doc["results"][0]["times"], doc["results"][1]["times"]
    ratio = statistics.fmean(tb) / statistics.fmean(ta)
    rule = "SAME" if abs(ratio - 1) <= BAND else ("SLOWER" if ratio > 1 else "FASTER")
    p = welch_p(ta, tb)
    welch = "SAME" if p >= 0.05 else ("SLOWER" if ratio > 1 else "FASTER")
    return rule, welch, len(ta)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--ms", type=float, default=100.0)
    args = ap.parse_args()
    has_hyperfine = shutil.which("hyperfine") is not None
    if not has_hyperfine:
        print("hyperfine is not installed here: only gpuopt's side is measured")
    print(f"load average before: {os.getloadavg()}   cpus: {os.cpu_count()}")
    n, n_more = calibrate(args.ms)
    base, more = loop_command(n), loop_command(n_more)
    print(
        f"workload: {sys.executable} busy loop of {n} iterations (~{args.ms:g} ms); "
        f"{n_more} for 5% more wall time"
    )
    tmp = Path(tempfile.mkdtemp())
    rows: dict[str, dict[str, list]] = {}
    t0 = time.perf_counter()
    for case, b in (("A/A", base), ("5%", more)):
        tag = "aa" if case == "A/A" else "five"
        for k in range(args.trials):
            v, runs = gpuopt_trial(base, b, tmp / f"g{tag}{k}.json")
            rows.setdefault("gpuopt", {}).setdefault(case, []).append((v, runs))
            if has_hyperfine:
                rule, welch, hruns = hyperfine_trial(base, b, tmp / f"h{tag}{k}.json")
                rows.setdefault("hyperfine ±2%", {}).setdefault(case, []).append((rule, hruns))
                rows.setdefault("hyperfine Welch", {}).setdefault(case, []).append((welch, hruns))
            print(f"  {case} trial {k + 1}: gpuopt {v} ({runs} runs)", flush=True)
    print(f"\n{'tool':<16} {'A/A false':>10} {'runs':>5} {'5% found':>9} {'runs':>5}")
    for tool, cases in rows.items():
        aa, pw = cases.get("A/A", []), cases.get("5%", [])
        false = sum(v not in ("SAME", "INCONCLUSIVE") for v, _ in aa) / max(1, len(aa))
        found = sum(v == "SLOWER" for v, _ in pw) / max(1, len(pw))
        print(
            f"{tool:<16} {false:>10.0%} {statistics.median(r for _, r in aa):>5g} "
            f"{found:>9.0%} {statistics.median(r for _, r in pw):>5g}"
        )
    print(f"({time.perf_counter() - t0:.0f} s; load average after: {os.getloadavg()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
