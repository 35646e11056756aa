"""A/A false alarms and power of interleaved rounds with adaptive stopping.

    .venv/bin/python -m tests.benchmarks.aa_power [--quick] [--seed N]   (from the repository root)

Each round runs the baseline and the variant once per block in a fresh random order
(measure.schedule.block_order), through the real runner (measure.runner.run_command),
computes the paired estimate after every block (measure.stats) and stops by the
round rule (measure.sequential: 10 to 30 blocks, looks every 5, threshold 2 %). One warm-up
run per arm is excluded. The workload is a CPU-bound bash loop of ~30 ms (calibrated at
start); the machine's own noise (other processes) is the noise.

- A/A: 40 rounds, the variant identical to the baseline. Target: FASTER or SLOWER in
  at most 5 % of the rounds.
- Power: 20 rounds, the variant does 5 % more loop iterations. Target: SLOWER in at
  least 90 % of the rounds; the median number of blocks to the verdict is printed.

This drives its own loop with the measure parts, not the session layer, and skips the
baseline gate: it flatters. `--cli` measures the way a person does instead: per trial a
fresh session on a git repository holding a Python busy loop (run with this interpreter's
own path), `gpuopt baseline` with its defaults (the gate included), an identical variant
and one with 5% more wall time, and one `gpuopt round` with both, all through the command
line. It prints each baseline's outcome and both verdicts of each round. Not a pytest
module.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from measure import sequential
from measure.runner import run_command
from measure.schedule import block_order
from measure.stats import PairedEstimate, paired_estimate, paired_log_ratios

ROOT = Path(__file__).resolve().parents[2]
MIN_BLOCKS, MAX_BLOCKS, THRESHOLD = 10, 30, 0.02


def loop_command(iterations: int) -> str:
    return f"i=0; while [ $i -lt {iterations} ]; do i=$((i+1)); done"


def wall(command: str, cwd: str) -> float:
    r = run_command(command, cwd, timeout_s=60)
    if not r.ok or r.value is None:
        raise SystemExit(f"the workload failed: {r.error}")
    return r.value


def calibrate(cwd: str, target_s: float) -> int:
    probe = 2000
    t = statistics.median(wall(loop_command(probe), cwd) for _ in range(5))
    return max(100, round(probe * target_s / t))


def one_round(
    baseline_cmd: str, variant_cmd: str, cwd: str, rng: random.Random
) -> tuple[PairedEstimate, int, str, float]:
    cmds = {"baseline": baseline_cmd, "variant": variant_cmd}
    for c in cmds.values():  # warm-up, excluded
        wall(c, cwd)
    base: list[float] = []
    var: list[float] = []
    blocks = 0
    est = paired_estimate([])
    design = sequential.Design.plan(MIN_BLOCKS, MAX_BLOCKS)
    while True:
        got = {arm: wall(cmds[arm], cwd) for arm in block_order(list(cmds), rng)}
        base.append(got["baseline"])
        var.append(got["variant"])
        blocks += 1
        d = paired_log_ratios(base, var)
        # The engine's rule (measure.sequential): the verdict at the design's looks only.
        look = sequential.judge(d, THRESHOLD, design)
        est = dataclasses.replace(paired_estimate(d, threshold=THRESHOLD), verdict=look.verdict)
        if design.is_look(blocks) and (look.decided or blocks >= MAX_BLOCKS):
            return est, blocks, "decided" if look.decided else "max_blocks", robust_sd(d)


def robust_sd(d: list[float]) -> float:
    """The spread of the per-block log ratios: 1.4826 x median absolute deviation."""
    med = statistics.median(d)
    return 1.4826 * statistics.median(abs(x - med) for x in d)


def series(
    label: str, rounds: int, baseline_cmd: str, variant_cmd: str, cwd: str, seed: int
) -> list[tuple[PairedEstimate, int, str, float]]:
    print(f"\n== {label}: {rounds} rounds")
    out = []
    t0 = time.perf_counter()
    for k in range(rounds):
        rng = random.Random(seed * 1000 + k)
        est, blocks, reason, sd = one_round(baseline_cmd, variant_cmd, cwd, rng)
        out.append((est, blocks, reason, sd))
        ci = (
            f"[{est.ci_low:.4f}, {est.ci_high:.4f}]"
            if est.ci_low is not None and est.ci_high is not None
            else "[-]"
        )
        print(
            f"  round {k + 1:2d}: {est.verdict:<12} ratio {est.ratio:.4f} {ci}"
            f"  blocks {blocks:2d} ({reason})  noise sd(d) {sd:.3f}"
            + (f"  needs ~{est.blocks_needed} more" if est.blocks_needed else "")
        )
    print(f"  ({time.perf_counter() - t0:.0f} s)")
    return out


def _gpuopt(ledger: Path, *args: str) -> tuple[int, str, str]:
    got = subprocess.run(
        [sys.executable, "-m", "tui.cli", "--ledger", str(ledger), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return got.returncode, got.stdout, got.stderr


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def cli_trial(k: int, n: int, n_more: int, work: Path) -> dict[str, object]:
    """One fresh session through the command line: baseline (defaults), then a round."""
    repo = work / f"repo{k}"
    repo.mkdir()
    (repo / "bench.py").write_text(
        "n = int(open('n.txt').read())\ni = 0\nwhile i < n:\n    i += 1\n"
    )
    (repo / "n.txt").write_text(f"{n}\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "bench")
    ledger = work / f"l{k}.db"
    code, sid, err = _gpuopt(
        ledger,
        "new",
        "--repo",
        str(repo),
        "--title",
        "aa",
        "--workload",
        f"w={sys.executable} bench.py",
    )
    assert code == 0, err
    sid = sid.strip()
    t0 = time.perf_counter()
    code, out, err = _gpuopt(ledger, "baseline", sid, "--json")
    base_s = time.perf_counter() - t0
    b = json.loads(out)
    outcome = b.get("outcome") or b["reproducibility"]
    row: dict[str, object] = {
        "outcome": outcome,
        "baseline_runs": b["runs_per_workload"],
        "baseline_s": base_s,
        "exit": code,
    }
    if code != 0:
        return row
    (repo / "n.txt").write_text(f"{n_more}\n")
    patch = work / f"p{k}.diff"
    patch.write_text(
        subprocess.run(
            ["git", "-C", str(repo), "diff"], capture_output=True, text=True, check=True
        ).stdout
    )
    _git(repo, "checkout", "-q", "--", ".")
    assert _gpuopt(ledger, "variant", "add", sid, "--name", "same", "--ref", "HEAD")[0] == 0
    assert _gpuopt(ledger, "variant", "add", sid, "--name", "more", "--patch", str(patch))[0] == 0
    t0 = time.perf_counter()
    code, out, err = _gpuopt(ledger, "round", sid, "--json")
    row["round_s"] = time.perf_counter() - t0
    assert code == 0, err
    doc = json.loads(out)
    for c in doc["comparisons"]:
        row[c["variant"]] = c.get("speed_verdict", c["verdict"])
        row[f"{c['variant']}_ratio"] = c["ratio"]
    row["blocks"] = doc["round"]["blocks"]
    row["baseline_check"] = doc["round"]["baseline_reproduced"]
    return row


def cli_main(trials: int) -> int:
    from tests.benchmarks.compare_vs_hyperfine import calibrate as calibrate_python

    print(f"load average before: {os.getloadavg()}   cpus: {os.cpu_count()}")
    n, n_more = calibrate_python(100.0)
    print(f"workload: {sys.executable} bench.py, {n} iterations (~100 ms); {n_more} for +5%")
    work = Path(tempfile.mkdtemp())
    rows = []
    for k in range(trials):
        row = cli_trial(k, n, n_more, work)
        rows.append(row)
        print(f"  trial {k + 1}: {row}", flush=True)
    outcomes = Counter(str(r["outcome"]) for r in rows)
    ran = [r for r in rows if "same" in r]
    aa_false = sum(r["same"] in ("FASTER", "SLOWER") for r in ran)
    found = [r for r in ran if r["more"] == "SLOWER"]
    print("\n== summary")
    print(
        f"baselines: {dict(outcomes)} of {len(rows)}; median runs "
        f"{statistics.median(int(str(r['baseline_runs'])) for r in rows):g}"
    )
    if ran:
        print(
            f"A/A: {aa_false}/{len(ran)} false FASTER/SLOWER; "
            f"verdicts {dict(Counter(str(r['same']) for r in ran))}"
        )
        print(
            f"power (+5%): SLOWER {len(found)}/{len(ran)}; "
            f"verdicts {dict(Counter(str(r['more']) for r in ran))}; median blocks "
            f"{statistics.median(int(str(r['blocks'])) for r in ran):g}"
        )
        checks = Counter(str(r["baseline_check"]) for r in ran)
        print(f"per-round baseline check reproduced: {dict(checks)}")
    print(f"load average after: {os.getloadavg()}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10 A/A and 5 power rounds")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--target-ms", type=float, default=30.0)
    ap.add_argument("--cli", type=int, metavar="TRIALS", help="through the command line")
    args = ap.parse_args()
    if args.cli:
        return cli_main(args.cli)
    aa_rounds, power_rounds = (10, 5) if args.quick else (40, 20)
    cwd = tempfile.gettempdir()
    print(f"load average before: {os.getloadavg()}   cpus: {os.cpu_count()}")
    n = calibrate(cwd, args.target_ms / 1000)
    base_cmd, more_cmd = loop_command(n), loop_command(round(n * 1.05))
    print(f"workload: bash loop of {n} iterations (~{args.target_ms:g} ms); variant +5 %")

    aa = series("A/A (identical variant)", aa_rounds, base_cmd, base_cmd, cwd, args.seed)
    pw = series("power (5 % more work)", power_rounds, base_cmd, more_cmd, cwd, args.seed + 1)

    aa_counts = Counter(str(e.verdict) for e, *_ in aa)
    alarms = aa_counts["FASTER"] + aa_counts["SLOWER"]
    print("\n== summary")
    print(
        f"A/A:   {dict(aa_counts)}; false alarms (FASTER/SLOWER) {alarms}/{len(aa)}"
        f" = {100 * alarms / len(aa):.1f} % (target <= 5 %);"
        f" median blocks {statistics.median(b for _, b, *_ in aa):g}"
    )
    pw_counts = Counter(str(e.verdict) for e, *_ in pw)
    hits = [b for e, b, *_ in pw if e.verdict == "SLOWER"]
    ratios = [e.ratio for e, *_ in pw if e.ratio is not None]
    print(
        f"power: {dict(pw_counts)}; SLOWER {len(hits)}/{len(pw)}"
        f" = {100 * len(hits) / len(pw):.1f} % (target >= 90 %);"
        f" median blocks to SLOWER {statistics.median(hits) if hits else float('nan'):g};"
        f" median measured ratio {statistics.median(ratios):.4f}"
    )
    noise = statistics.median(sd for *_, sd in aa + pw)
    print(
        f"noise: median per-block sd of ln(variant/baseline) {noise:.3f}"
        f" (a 5 % effect is ln 1.05 = 0.049)"
    )
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
