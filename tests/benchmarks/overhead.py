"""Per-run overhead of gpuopt's runner against hyperfine, on `true` and `sleep 0.1`.

    .venv/bin/python -m tests.benchmarks.overhead [--runs 50]   (from the repository root)

gpuopt always runs `bash -c CMD`, so the fair reference is hyperfine timing the same
process tree with its output read through a pipe, as gpuopt reads it:
`hyperfine -N --output=pipe "bash -c CMD"`. Also printed: hyperfine on the bare command
(`-N CMD`: no shell at all, so the difference includes bash's own start) and hyperfine's
default shell mode with `--shell=bash` (which subtracts its measured shell start-up time).
The arms take turns in chunks of 10 runs, in a fresh random order per turn, so that a
change of load hits all of them alike. "Added" = gpuopt's median wall time minus the
reference's median. "Whole Python call" is the time the call to run_command takes in all
(spawn, reads, reap, result), which bounds how fast runs can follow each other.

Then what a round adds to each run beside the process: the telemetry hand-off (the
monitor's run_started + run_finished, as a round makes it: NVML if present, and the host)
and the ledger write of the run's record, committed once per block of `--block` runs (a
commit per run, as before, is printed beside it).

Then the cost per run of whole calls on `true`, side by side: `gpuopt compare -N true true`
(interleaved blocks, statistics at every look; with and without --ledger) against
`hyperfine -N true true`, each timed at two run counts; the slope between them is the cost
per run with the start-up of either tool taken out.

Then Python's own floor on `true`, beside `hyperfine -N true`, interleaved: a bare loop of
`os.posix_spawn` + `os.wait4` (no pipes, nothing else: no Python program that runs a
process can pay less), `subprocess.Popen` with both pipes and a new session (what the
runner needs), and `run_command` itself; each as wall time start to start and as this
process's CPU per run (children excluded). On a machine whose cores are busy, a run's wall
time follows the CPU it needs, so this floor bounds the ratio any round can reach.

Last, issue 21's figures: a `gpuopt round`'s cost per run on `true` (start to start, from
the ledger) beside `hyperfine -N true`, interleaved, and `compare -N`'s time to its first
run (tests.benchmarks.compare_vs_hyperfine measures both the same way).

Then the same floor interleaved run by run (`interleaved`): each turn runs every arm once
in a fresh random order, (a) Popen + wait, (b) os.posix_spawn + os.wait4, (c) run_command,
(d) a round's per-run path (the executor's `run`, host telemetry on, runs held for a block
commit), with `hyperfine -N --runs 200 true` between turns of 200; a slow spell hits every
arm alike. Printed: the median and mean wall time per call, and this process's CPU.

`--only floor,round` runs only those sections (names: runner, handoff, cost, floor,
interleaved, round).

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
from collections.abc import Callable
from pathlib import Path

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


def handoff_and_ledger(runs: int, block: int) -> None:
    from ledger import Ledger  # the benchmark's own imports: measure needs none of it
    from measure.telemetry.monitor import make_monitor
    from session import models as m

    print(f"\n== per run, beside the process ({runs} runs)")
    child = subprocess.Popen(["sleep", "60"])  # a live process tree for the host to follow
    mon = make_monitor(None, "bench")
    print(f"  telemetry: {mon.status if mon.status != 'ok' else 'NVML and host'}")
    pairs = []
    try:
        for i in range(runs + 20):
            t0 = time.perf_counter()
            mon.run_started(f"r{i}", child.pid)
            mon.run_finished(f"r{i}")
            pairs.append(time.perf_counter() - t0)
    finally:
        mon.close()
        child.kill()
        child.wait()
    pairs = pairs[20:]
    print(f"  {'telemetry hand-off (start + finish)':<42} median {ms(statistics.median(pairs))}")
    with tempfile.TemporaryDirectory() as tmp:
        led = Ledger.open(Path(tmp) / "l.db")
        contract = m.Contract(workloads=[m.Workload(name="w", command="true")])
        session = m.Session(title="bench", repo=tmp, contract=contract)
        led.put(session)
        for label, per in (
            ("ledger, one commit per run", 1),
            ("ledger, one commit per block", block),
        ):
            t0 = time.perf_counter()
            for k in range(0, runs, per):
                with led.write():
                    for j in range(per):
                        led.put(
                            m.Run(
                                session_id=session.id,
                                arm="baseline",
                                workload="w",
                                block=k + j,
                                value=0.001,
                                stdout_tail="",
                                stderr_tail="",
                            )
                        )
            each = (time.perf_counter() - t0) / runs
            print(f"  {label + f' ({per} runs)':<42} per run {ms(each)}")
        led.close()


def _wall_of(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def per_run_cost(have_hf: bool, low: int = 20, high: int = 220, repeat: int = 3) -> None:
    print(f"\n== cost per run on `true`: whole calls at {low} and {high} runs per command")
    with tempfile.TemporaryDirectory() as tmp:
        gp = [sys.executable, "-m", "tui.cli"]
        arms: dict[str, Callable[[int], list[str]]] = {
            "gpuopt compare -N": lambda n: [*gp, "compare", "-N", "-w", "0", "-r", str(n),
                                            "--max-runs", str(n), "true", "true"],
            "gpuopt compare -N --ledger": lambda n: [*gp, "--ledger", f"{tmp}/l{n}.db",
                                                     "compare", "-N", "-w", "0", "-r", str(n),
                                                     "--max-runs", str(n), "true", "true"],
        }  # fmt: skip
        if have_hf:
            arms["hyperfine -N"] = lambda n: ["hyperfine", "-N", "--style", "none", "-r",
                                              str(n), "true", "true"]  # fmt: skip
        per: dict[str, float] = {}
        for label, make in arms.items():
            slopes = []
            for _ in range(repeat):
                lo, hi = _wall_of(make(low)), _wall_of(make(high))
                slopes.append((hi - lo) / (2 * (high - low)))  # two commands: 2 runs a block
            per[label] = statistics.median(slopes)
        ref = per.get("hyperfine -N")
        for label, each in per.items():
            rel = f"   {each / ref:5.2f}× hyperfine's" if ref else ""
            print(f"  {label:<42} per run {ms(each)}{rel}")


def python_floor(have_hf: bool, runs: int = 200, repeats: int = 3) -> None:
    """Python's least cost per run of `true`, beside hyperfine -N, interleaved."""
    from tests.benchmarks import compare_vs_hyperfine as cvh

    true = shutil.which("true") or "/bin/true"
    env = dict(os.environ)

    def spawn() -> None:
        os.wait4(os.posix_spawn(true, [true], env), 0)

    def popen() -> None:
        p = subprocess.Popen([true], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
        p.communicate()

    def runner() -> None:
        run_command("true", tempfile.gettempdir(), shell=None)

    arms: dict[str, Callable[[], None]] = {
        "python: posix_spawn + wait4 (bare)": spawn,
        "python: Popen, pipes, new session": popen,
        "gpuopt run_command (-N)": runner,
    }
    print(f"\n== Python's floor on `true` beside hyperfine -N ({runs} runs, {repeats} repeats)")
    wall: dict[str, list[float]] = {a: [] for a in [*arms, "hyperfine -N"]}
    cpu: dict[str, list[float]] = {a: [] for a in arms}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            for arm in random.sample(list(wall), len(wall)):
                if arm == "hyperfine -N":
                    if have_hf:
                        out = Path(tmp) / "hf.json"
                        cvh.run(["hyperfine", "-N", "--style", "none", "--warmup", "5",
                                 "--runs", str(runs), "--export-json", str(out), "true"],
                                Path(tmp))  # fmt: skip
                        wall[arm].append(json.loads(out.read_text())["results"][0]["mean"])
                    continue
                fn = arms[arm]
                for _ in range(5):
                    fn()
                c0, t0 = time.process_time(), time.perf_counter()
                for _ in range(runs):
                    fn()
                wall[arm].append((time.perf_counter() - t0) / runs)
                cpu[arm].append((time.process_time() - c0) / runs)
    ref = statistics.median(wall["hyperfine -N"]) if wall["hyperfine -N"] else None
    for arm, ws in wall.items():
        if not ws:
            continue
        w = statistics.median(ws)
        c = f"  our CPU {ms(statistics.median(cpu[arm]))}" if arm in cpu else " " * 21
        rel = f"   {w / ref:5.2f}x hyperfine -N" if ref else ""
        print(f"  {arm:<42} per run {ms(w)}{c}{rel}")


def interleaved(runs: int, turns: int = 3) -> None:
    """Each arm once per step, in random order, so that load hits them alike; hyperfine -N
    between turns (it cannot be interleaved run by run)."""
    from ledger import Ledger  # the benchmark's own imports: measure needs none of it
    from measure.telemetry.monitor import make_monitor
    from session import models as m
    from session.conduct.executor import ProcessExecutor
    from session.conduct.loop import COMMIT_EVERY_S
    from tests.benchmarks import compare_vs_hyperfine as cvh

    true = shutil.which("true") or "/bin/true"
    env = dict(os.environ)
    cwd = tempfile.gettempdir()
    with tempfile.TemporaryDirectory() as tmp:
        led = Ledger.open(Path(tmp) / "l.db")
        contract = m.Contract(workloads=[m.Workload(name="t", command="true")])
        session = m.Session(title="bench", repo=tmp, contract=contract)
        led.put(session)
        mon = make_monitor(None, session.id, gpu=False)
        ex = ProcessExecutor(led, session, mon)
        ex.batch = True
        block = [0]
        committed = [time.monotonic()]

        def popen() -> None:
            p = subprocess.Popen([true], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
            p.communicate()

        def spawn() -> None:
            os.wait4(os.posix_spawn(true, [true], env), 0)

        def runner() -> None:
            run_command("true", cwd, shell=None)

        def round_run() -> None:
            block[0] += 1
            ex.run(m.Run(session_id=session.id, arm="baseline", workload="t",
                         block=block[0]), Path(cwd))  # fmt: skip
            if block[0] % 2 == 0 and time.monotonic() - committed[0] >= COMMIT_EVERY_S:
                ex.flush()  # whole blocks, committed as a round does: at most 0.25 s apart
                committed[0] = time.monotonic()

        arms: dict[str, Callable[[], None]] = {
            "(a) Popen, pipes, new session + wait": popen,
            "(b) os.posix_spawn + os.wait4": spawn,
            "(c) run_command (-N)": runner,
            "(d) a round's per-run path (executor.run)": round_run,
        }
        wall: dict[str, list[float]] = {a: [] for a in arms}
        cpu: dict[str, float] = dict.fromkeys(arms, 0.0)
        hf: list[float] = []
        load = [os.getloadavg()[0]]
        for arm in arms.values():
            for _ in range(5):
                arm()
        for _ in range(turns):
            for _ in range(runs):
                for name in random.sample(list(arms), len(arms)):
                    c0, t0 = time.process_time(), time.perf_counter()
                    arms[name]()
                    wall[name].append(time.perf_counter() - t0)
                    cpu[name] += time.process_time() - c0
            out = Path(tmp) / "hf.json"
            cvh.run(["hyperfine", "-N", "--style", "none", "--warmup", "5", "--runs",
                     str(runs), "--export-json", str(out), "true"], Path(tmp))  # fmt: skip
            hf.append(json.loads(out.read_text())["results"][0]["mean"])
            load.append(os.getloadavg()[0])
        ex.close()
        mon.close()
        led.close()
    ref = statistics.median(hf)
    print(f"\n== interleaved run by run on `true` ({turns} turns of {runs} runs per arm); "
          f"load (1 min) {min(load):.2f}-{max(load):.2f}")  # fmt: skip
    print(f"  {'hyperfine -N --runs ' + str(runs) + ' true (median of means)':<46} {ms(ref)}")
    for name, ws in wall.items():
        med, mean = statistics.median(ws), statistics.fmean(ws)
        c = cpu[name] / len(ws)
        print(
            f"  {name:<46} median {ms(med)}  mean {ms(mean)}  our CPU {ms(c)}"
            f"   mean {mean / ref:5.2f}x hyperfine -N"
        )


def round_and_startup(have_hf: bool, runs: int, repeats: int = 3) -> None:
    """Issue 21's two figures: a round's cost per run on `true` beside `hyperfine -N true`
    (interleaved repeats), and `gpuopt compare -N`'s time to its first run."""
    from tests.benchmarks import compare_vs_hyperfine as cvh

    print(f"\n== a round on `true` beside hyperfine -N ({runs} runs, {repeats} repeats)")
    with tempfile.TemporaryDirectory() as tmp:
        if have_hf:
            for line in cvh.per_run_cost(Path(tmp), runs, repeats).splitlines():
                print(f"  {line}")
        else:
            starts = [cvh.compare_startup_s(Path(tmp)) for _ in range(repeats)]
            print(f"  compare -N start-up: {statistics.median(starts):.2f} s (target <= 0.3 s)")


def ms(x: float) -> str:
    return f"{x * 1000:8.3f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=10, help="runs per arm per turn")
    ap.add_argument("--block", type=int, default=2, help="runs per block (one commit each)")
    ap.add_argument("--round-runs", type=int, default=200, help="runs of a round on true")
    ap.add_argument("--only", default="", help="comma-separated sections to run (all)")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))

    def on(section: str) -> bool:
        return not only or section in only

    have_hf = shutil.which("hyperfine") is not None
    print(f"load average before: {os.getloadavg()}   cpus: {os.cpu_count()}")
    if not have_hf:
        print("hyperfine is not installed: printing gpuopt's figures only")
    rng = random.Random(0)
    for command in COMMANDS if on("runner") else []:
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
    if on("handoff"):
        handoff_and_ledger(args.runs * 5, args.block)
    if on("cost"):
        per_run_cost(have_hf)
    if on("floor"):
        python_floor(have_hf, args.round_runs)
    if on("interleaved"):
        interleaved(args.round_runs)
    if on("round"):
        round_and_startup(have_hf, args.round_runs)
    print(f"\nload average after: {os.getloadavg()}")
    print("target: <= 2 ms added per run against the fair reference, <= 1 % on 'sleep 0.1'")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
