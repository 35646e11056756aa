"""gpuopt bisect and `git bisect run` + hyperfine on real git histories, on this machine.

    python -m tests.benchmarks.bisect_real [--histories 3] [--step 0.15] [--commits 32]

Each history is made in a temporary folder: commits whose workload sleeps 50 ms
(`read d < dur; sleep $d`), a step change of --step (in wall time) at a random commit.
`git bisect run` works in its own clone (it checks commits out there) and calls the
script below at each midpoint, which runs `hyperfine --runs 10 GOOD MID` (GOOD in a
separate checkout of the good commit) and exits 1 (bad) when the ratio of the means is
above 1.10. gpuopt bisect runs through its command line with its defaults. Needs hyperfine
on PATH. Prints what each named and how long it took.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = "read d < dur; sleep $d"
BASE, START = 0.050, 0.005
GIT_ID = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
          "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip

SCRIPT = """#!/bin/bash
hyperfine --runs 10 -N --style none --export-json "$OUT/h.json" \\
  "bash -c 'read d < $GOOD/dur; sleep \\$d'" "bash -c 'read d < dur; sleep \\$d'" >/dev/null 2>&1
python3 - "$OUT/h.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
sys.exit(1 if r[1]["mean"] / r[0]["mean"] > 1.10 else 0)
EOF
"""


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ID}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


def make_history(where: Path, n: int, culprit: int, step: float) -> Path:
    repo = where / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for i in range(n):
        level = 1 + step if i >= culprit else 1.0
        (repo / "dur").write_text(f"{round((BASE + START) * level - START, 4)}\n")
        (repo / "n").write_text(f"{i}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"commit {i}")
    return repo


def index_of(repo: Path, sha: str) -> int:
    return int(git(repo, "show", f"{sha}:n").strip())


def hyperfine_bisect(where: Path, repo: Path) -> tuple[int | str, float]:
    clone, good, out = where / "clone", where / "good", where / "out"
    git(where, "clone", "-q", str(repo), str(clone))
    git(where, "clone", "-q", str(repo), str(good))
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    git(good, "checkout", "-q", first)
    out.mkdir()
    script = where / "hyperfine_script.sh"
    script.write_text(SCRIPT)
    script.chmod(0o755)
    t0 = time.monotonic()
    git(clone, "bisect", "start", "main", first)
    env = {**os.environ, **GIT_ID, "GOOD": str(good), "OUT": str(out)}
    done = subprocess.run(["git", "bisect", "run", str(script)], cwd=clone, env=env,
                          capture_output=True, text=True)  # fmt: skip
    elapsed = time.monotonic() - t0
    line = next((ln for ln in done.stdout.splitlines() if "is the first bad commit" in ln), "")
    return (index_of(repo, line.split()[0]) if line else "none"), elapsed


def gpuopt_bisect(where: Path, repo: Path, n: int) -> tuple[object, float, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUOPT_WORKTREES": str(where / "wt")}
    ledger = where / "l.db"
    t0 = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(ledger), "bisect", "--repo", str(repo),
         "--good", f"main~{n - 1}", "--bad", "main", "--", WORKLOAD],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    elapsed = time.monotonic() - t0
    import sqlite3

    with sqlite3.connect(ledger) as conn:
        rec = json.loads(conn.execute("SELECT data FROM bisections").fetchone()[0])
    found = [c["candidates"] for c in rec["answer"]["changes"]] or rec["answer"]["kind"]
    rounds = sum(1 for s in rec["steps"] if s["runs"])
    return found, elapsed, rounds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--histories", type=int, default=3)
    ap.add_argument("--commits", type=int, default=32)
    ap.add_argument("--step", type=float, default=0.15)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if shutil.which("hyperfine") is None:
        sys.exit("hyperfine is not on PATH (apt-get install hyperfine)")
    rng = random.Random(args.seed)
    for _ in range(args.histories):
        culprit = rng.randint(1, args.commits - 1)
        with tempfile.TemporaryDirectory() as tmp:
            where = Path(tmp)
            repo = make_history(where, args.commits, culprit, args.step)
            ours, our_s, rounds = gpuopt_bisect(where, repo, args.commits)
            theirs, their_s = hyperfine_bisect(where, repo)
        what = f"culprit #{culprit} (+{args.step:.0%}" if args.step else "A/A (no change"
        print(
            f"{what} of {args.commits}): gpuopt {ours} in {rounds} "
            f"rounds, {our_s:.0f} s; git bisect run + hyperfine #{theirs}, {their_s:.0f} s"
        )


if __name__ == "__main__":
    main()
