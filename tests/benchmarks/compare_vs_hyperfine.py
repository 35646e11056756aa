"""gpuopt's rule beside hyperfine's, in one interleaved run: the table of issue 21.

    python -m tests.benchmarks.compare_vs_hyperfine [--trials 3] [--ms 30] [--cost-runs 200]

The workload is a Python busy loop (this interpreter's own path, never a pyenv shim, and a
script file, so every command is plain words that run without a shell), calibrated to about
--ms milliseconds; the variants take 1.8%, 4.4% and 10% more process time (the
interpreter's start is calibrated out), and an A/A pair takes the same. Each trial runs
every arm once on its pair, the arms in a fresh random order (interleaved: a slow spell of
the machine falls on all of them alike):

- gpuopt full flow: `new`, a default `baseline`, `variant add`, a default `round`;
- gpuopt compare: `gpuopt compare -N` (10 to 30 interleaved blocks, the round's rule);
- hyperfine 10+10, the ±2% ratio rule: `hyperfine -N --runs 10`, ratio of means beyond ±2%;
- hyperfine 10+10, Welch: the same runs, Welch's t-test at 5%;
- hyperfine 30+30, Welch: `hyperfine -N --runs 30`;
- compare's old rule: the 95% interval of compare's own paired runs excluding 1 (what the
  old output printed beside a verdict decided on a wider interval).

Columns: A/A false (an A/A pair said to differ: FASTER, SLOWER or MEASURABLE), A/A no
decision (INCONCLUSIVE), each change found (its direction said: SLOWER, or MEASURABLE
slower; "w" counts a wrong sign), and seconds of wall time per decision (the arm's time
over the trials it decided). Then the per-run cost on `true`: a gpuopt round's runs (start
to start, from the ledger) against `hyperfine -N`, interleaved, and `compare -N`'s fixed
start-up. The load average is printed before and after. Not a pytest module.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from measure import stats  # noqa: E402

BAND = 0.02
CASES = {"A/A": 0.0, "+1.8%": 0.018, "+4.4%": 0.044, "+10%": 0.10}
ARMS = (
    "gpuopt full flow",
    "gpuopt compare",
    "hyperfine 10+10, ±2% ratio",
    "hyperfine 10+10, Welch",
    "hyperfine 30+30, Welch",
    "compare's printed 95% CI excluding 1 (old)",
)
LOOP = "import sys\nn = int(sys.argv[1]) if len(sys.argv) > 1 else int(open('n.txt').read())\ni = 0\nwhile i < n:\n    i += 1\n"  # noqa: E501
GPUOPT = [sys.executable, "-m", "tui.cli"]
PY = [sys.executable, "-I", "-S"]  # the workload's interpreter: no site (it costs ~100 ms here)


def _env(tmp: Path) -> dict[str, str]:
    """gpuopt as installed: its bytecode cached (outside the tree), whatever this shell's
    PYTHONDONTWRITEBYTECODE says (it makes every start compile gpuopt's sources anew)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUOPT_WORKTREES": str(tmp / "worktrees")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "gpuopt-bench-pycache")
    return env


def _wall(script: Path, n: int, repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([*PY, str(script), str(n)], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def calibrate(script: Path, ms: float) -> tuple[int, float, float]:
    """Iterations for about `ms` in all; the fixed start, and the time per iteration."""
    lo, hi = 100_000, 600_000
    t_lo, t_hi = _wall(script, lo), _wall(script, hi)
    per = max(1e-12, (t_hi - t_lo) / (hi - lo))
    start = max(0.0, t_lo - per * lo)
    n = max(10_000, int((ms / 1000 - start) / per))
    return n, start, per


def more_iterations(n: int, start: float, per: float, effect: float) -> int:
    """Iterations for `effect` more process time than n of them (start included)."""
    return n + int(effect * (start + per * n) / per)


def run(
    cmd: list[str], tmp: Path, cwd: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.perf_counter()
    done = subprocess.run(
        cmd, cwd=cwd or ROOT, env=_env(tmp), capture_output=True, text=True, check=False
    )
    return done, time.perf_counter() - t0


# ---------------------------------------------------------------------------- the arms


def full_flow(script: Path, n_a: int, n_b: int, tmp: Path) -> tuple[str, float | None, float]:
    repo = tmp / f"repo{random.randrange(10**9)}"
    repo.mkdir()
    shutil.copy(script, repo / "loop.py")
    (repo / "n.txt").write_text(f"{n_a}\n")
    git = ["git", "-C", str(repo)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run(
        [*git, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "a"], check=True
    )
    ledger = repo.parent / (repo.name + ".db")
    base = [*GPUOPT, "--ledger", str(ledger)]
    total = 0.0
    done, t = run(
        [*base, "new", "--repo", str(repo), "--title", "b", "--workload",
         f"w={' '.join(PY)} loop.py"], tmp,
    )  # fmt: skip
    total += t
    sid = done.stdout.strip()
    done, t = run([*base, "baseline", sid, "--no-telemetry"], tmp)
    total += t
    if n_b == n_a:
        done, t = run([*base, "variant", "add", sid, "--name", "v", "--ref", "HEAD"], tmp)
    else:
        (repo / "n.txt").write_text(f"{n_b}\n")
        patch = repo.parent / (repo.name + ".diff")
        patch.write_text(subprocess.run([*git, "diff"], capture_output=True, text=True).stdout)
        subprocess.run([*git, "checkout", "-q", "--", "."], check=True)
        done, t = run([*base, "variant", "add", sid, "--name", "v", "--patch", str(patch)], tmp)
    total += t
    done, t = run([*base, "round", sid, "--no-telemetry", "--json"], tmp)
    total += t
    if done.returncode != 0:
        return f"error ({done.stderr.strip()[-120:]})", None, total
    (c,) = json.loads(done.stdout)["comparisons"]
    return c["verdict"], c["ratio"], total


def compare_arm(a: str, b: str, tmp: Path) -> tuple[str, float | None, float, dict]:
    out = tmp / f"c{random.randrange(10**9)}.json"
    done, t = run([*GPUOPT, "compare", "-N", a, b, "--export-json", str(out)], tmp)
    if done.returncode != 0:
        return "error", None, t, {}
    doc = json.loads(out.read_text())
    (c,) = doc["gpuopt"]["comparisons"]
    return c["verdict"], c["ratio"], t, doc


def old_rule(doc: dict) -> str:
    """The 95% paired interval of compare's own runs excluding 1: the old printed figure."""
    if not doc:
        return "error"
    ta, tb = doc["results"][0]["times"], doc["results"][1]["times"]
    d = stats.paired_log_ratios(ta[: len(tb)], tb[: len(ta)])
    est = stats.paired_estimate(d, threshold=BAND, confidence=0.95)
    if est.ci_low is None or est.ci_high is None or est.ci_low <= 1 <= est.ci_high:
        return "SAME"
    return "SLOWER" if est.ci_low > 1 else "FASTER"


def welch_p(x: list[float], y: list[float]) -> float:
    mx, my = statistics.fmean(x), statistics.fmean(y)
    vx, vy = statistics.variance(x) / len(x), statistics.variance(y) / len(y)
    t = (my - mx) / math.sqrt(vx + vy) if vx + vy > 0 else 0.0
    return 2 * (1 - statistics.NormalDist().cdf(abs(t)))  # normal approximation: enough here


def hyperfine_arm(a: str, b: str, runs: int, tmp: Path) -> tuple[str, str, float]:
    out = tmp / f"h{random.randrange(10**9)}.json"
    done, t = run(
        ["hyperfine", "-N", "--style", "none", "--runs", str(runs), "--export-json", str(out),
         a, b], tmp,
    )  # fmt: skip
    if done.returncode != 0:
        return "error", "error", t
    doc = json.loads(out.read_text())
    ta, tb = doc["results"][0]["times"], doc["results"][1]["times"]
    ratio = statistics.fmean(tb) / statistics.fmean(ta)
    rule = "SAME" if abs(ratio - 1) <= BAND else ("SLOWER" if ratio > 1 else "FASTER")
    welch = "SAME" if welch_p(ta, tb) >= 0.05 else ("SLOWER" if ratio > 1 else "FASTER")
    return rule, welch, t


# ---------------------------------------------------------------------------- the table


def direction(verdict: str, ratio: float | None) -> str:
    """slower / faster / same / none (no decision) / error."""
    if verdict in ("SLOWER", "FASTER"):
        return verdict.lower()
    if verdict == "MEASURABLE":
        return "slower" if ratio is not None and ratio > 1 else "faster"
    if verdict == "SAME":
        return "same"
    if verdict == "INCONCLUSIVE":
        return "none"
    return "error"


def _per_decision(rows: list[tuple[str, float]]) -> str:
    decided = sum(d not in ("none", "error") for d, _ in rows)
    return f"{sum(t for _, t in rows) / decided:.1f}" if decided else "—"


def table(
    results: dict[str, dict[str, list[tuple[str, float]]]], trials: int, run: list[str]
) -> str:
    cases = [c for c in run if c != "A/A"]
    head = f"| arm | A/A false | A/A no decision | {' | '.join(c + ' found' for c in cases)} | s per decision | s per decision at +10% |"  # noqa: E501
    lines = [head, "|" + "---|" * (5 + len(cases))]
    for arm in ARMS:
        got = results.get(arm)
        if not got:
            continue
        aa = got.get("A/A", [])
        cells = [
            f"{sum(d in ('slower', 'faster') for d, _ in aa)}/{len(aa)}",
            f"{sum(d == 'none' for d, _ in aa) / max(1, len(aa)):.0%}",
        ]
        for case in cases:
            rows = got.get(case, [])
            found = sum(d == "slower" for d, _ in rows)
            wrong = sum(d == "faster" for d, _ in rows)
            cells.append(f"{found}/{len(rows)}" + (f" ({wrong} w)" if wrong else ""))
        cells.append(_per_decision([r for rows in got.values() for r in rows]))
        cells.append(_per_decision(got.get("+10%", [])))
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    lines.append(
        f"({trials} trial(s) per case; 'found': the right direction said; (n w): n said the "
        "wrong way; an arm's s per decision is its wall time over the trials it decided)"
    )
    return "\n".join(lines)


# ---------------------------------------------------------------------------- per-run cost


def per_run_cost(tmp: Path, runs: int, repeats: int = 3) -> str:
    """gpuopt round's per-run cost on `true` against hyperfine -N, interleaved."""
    repo = tmp / "true-repo"
    repo.mkdir()
    (repo / "README").write_text("x\n")
    git = ["git", "-C", str(repo)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "a"],
                   check=True)  # fmt: skip
    ledger = tmp / "true.db"
    base = [*GPUOPT, "--ledger", str(ledger)]
    sid = run([*base, "new", "--repo", str(repo), "--title", "t", "--workload", "t=true"],
              tmp)[0].stdout.strip()  # fmt: skip
    run([*base, "baseline", sid, "--no-telemetry"], tmp)
    run([*base, "variant", "add", sid, "--name", "same", "--ref", "HEAD"], tmp)
    blocks = max(10, runs // 2)
    ours: list[float] = []
    theirs: list[float] = []
    startups: list[float] = []
    for _ in range(repeats):
        done, _t = run([*base, "round", sid, "--min-blocks", str(blocks), "--max-blocks",
                        str(blocks), "--json"], tmp)  # fmt: skip
        rid = json.loads(done.stdout)["round"]["id"]
        ours.append(_start_to_start(ledger, rid))
        out = tmp / "hf-true.json"
        run(["hyperfine", "-N", "--style", "none", "--warmup", "5", "--runs", str(runs),
             "--export-json", str(out), "true"], tmp)  # fmt: skip
        theirs.append(json.loads(out.read_text())["results"][0]["mean"])
        startups.append(compare_startup_s(tmp))
    floor = min(run([sys.executable, "-c", "pass"], tmp)[1] for _ in range(5))
    ratio = statistics.median(o / t for o, t in zip(ours, theirs, strict=True))
    return (
        f"per-run cost on `true`, {repeats} interleaved repeats: gpuopt round "
        f"{statistics.median(ours) * 1e3:.2f} ms per run (start to start, telemetry on), "
        f"hyperfine -N {statistics.median(theirs) * 1e3:.2f} ms (mean of {runs}); median "
        f"ratio {ratio:.2f}x (target <= 1.5x)\n"
        f"compare -N start-up: {statistics.median(startups):.2f} s (from its start to its "
        f"first run's; target <= 0.3 s; `python -c pass` alone: {floor:.2f} s)"
    )


def compare_startup_s(tmp: Path) -> float:
    """Seconds from starting `gpuopt compare -N` to its first run: each run appends the
    clock to a file (`sh` and `date` start in about 2 ms, counted here)."""
    stamps = tmp / f"stamps{random.randrange(10**9)}"
    cmd = f'sh -c "date +%s%N >> {stamps}"'
    t0 = time.time_ns()
    done, _ = run([*GPUOPT, "compare", "-N", "-w", "0", "-r", "2", "--max-runs", "2", cmd, cmd],
                  tmp)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"compare failed: {done.stderr.strip()[-200:]}")
    first = min(int(x) for x in stamps.read_text().split())
    stamps.unlink()
    return (first - t0) / 1e9


def _start_to_start(ledger: Path, round_id: str) -> float:
    import sqlite3

    db = sqlite3.connect(ledger)
    rows = [json.loads(d) for (d,) in db.execute("SELECT data FROM runs WHERE round_id = ?",
                                                 (round_id,))]  # fmt: skip
    db.close()
    starts = sorted(r["started_us"] for r in rows if not r.get("warmup"))
    return (starts[-1] - starts[0]) / 1e6 / max(1, len(starts) - 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=3, help="trials per case (3)")
    ap.add_argument("--ms", type=float, default=30.0, help="the workload's length (30 ms)")
    ap.add_argument("--cost-runs", type=int, default=200, help="runs of `true` per repeat")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--cases", default=",".join(CASES), help=f"which cases, comma-separated ({','.join(CASES)})"
    )
    args = ap.parse_args()
    chosen = [c for c in args.cases.split(",") if c]
    if unknown := [c for c in chosen if c not in CASES]:
        ap.error(f"unknown case(s) {unknown}; the cases are {list(CASES)}")
    if shutil.which("hyperfine") is None:
        print("hyperfine is not installed (apt-get install hyperfine): nothing to compare")
        return 1
    random.seed(args.seed)
    print(f"load average before: {os.getloadavg()}   cpus: {os.cpu_count()}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="gpuopt-vs-hyperfine-"))
    script = tmp / "loop.py"
    script.write_text(LOOP)
    n, start, per = calibrate(script, args.ms)
    pairs = {case: more_iterations(n, start, per, CASES[case]) for case in chosen}
    print(f"workload: {' '.join(PY)} loop.py, {n} iterations (~{args.ms:g} ms, start "
          f"{start * 1e3:.1f} ms); variants {pairs}", flush=True)  # fmt: skip
    results: dict[str, dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    t0 = time.perf_counter()
    plan = [(case, k) for k in range(args.trials) for case in chosen]
    random.shuffle(plan)
    for case, k in plan:
        a = f"{' '.join(PY)} {script} {n}"
        b = f"{' '.join(PY)} {script} {pairs[case]}"
        arms = ["full", "compare", "h10", "h30"]
        random.shuffle(arms)
        said = []
        for arm in arms:
            if arm == "full":
                v, ratio, t = full_flow(script, n, pairs[case], tmp)
                results[ARMS[0]][case].append((direction(v, ratio), t))
                said.append(f"full {v}")
            elif arm == "compare":
                v, ratio, t, doc = compare_arm(a, b, tmp)
                results[ARMS[1]][case].append((direction(v, ratio), t))
                results[ARMS[5]][case].append((direction(old_rule(doc), None), t))
                said.append(f"compare {v}")
            elif arm == "h10":
                rule, welch, t = hyperfine_arm(a, b, 10, tmp)
                results[ARMS[2]][case].append((direction(rule, None), t))
                results[ARMS[3]][case].append((direction(welch, None), t))
                said.append(f"hf10 {rule}/{welch}")
            else:
                _rule, welch, t = hyperfine_arm(a, b, 30, tmp)
                results[ARMS[4]][case].append((direction(welch, None), t))
                said.append(f"hf30 {welch}")
        print(f"  {case} trial {k + 1}: " + ", ".join(said), flush=True)
    print()
    print(table(results, args.trials, chosen))
    print()
    print(per_run_cost(tmp, args.cost_runs))
    print(f"({time.perf_counter() - t0:.0f} s; load average after: {os.getloadavg()})")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
