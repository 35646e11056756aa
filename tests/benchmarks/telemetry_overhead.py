"""CPU cost of the telemetry sampler: target at most 1% of one core at 4 Hz.

Runs the sampler as during a run (4 Hz, following a real child process's tree) for
`--seconds` (default 60) with the host backend, plus NVML when this machine has a GPU
(`--replay SCENARIO` adds a replayed GPU instead), writing every batch to a real SQLite
ledger through the writer thread. Prints the owner thread's CPU time (sampling: what the
target is about), the writer thread's, and the whole process's, each as a share of one core.

    .venv/bin/python -m tests.benchmarks.telemetry_overhead [--seconds 60] [--replay clean]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--replay", metavar="SCENARIO", help="add a replayed GPU (default: real NVML)")
    ap.add_argument("--no-ledger", action="store_true", help="discard rows instead of writing")
    args = ap.parse_args()

    from ledger import Ledger
    from measure.telemetry import make_monitor

    tmp = Path(tempfile.mkdtemp(prefix="gpuopt-bench-"))
    writer_cpu = [0.0]
    if args.no_ledger:

        def sink(rows: list) -> None:
            return None

    else:
        ledger = Ledger.open(tmp / "bench.db")

        def sink(rows: list) -> None:
            t0 = time.thread_time()
            ledger.insert_samples(rows)
            writer_cpu[0] += time.thread_time() - t0

    monitor = make_monitor(sink, "bench", scenario=args.replay)
    status = monitor.status
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(86400)"])
    wall0, proc0 = time.monotonic(), time.process_time()
    cpu0 = monitor.sampler.cpu_s
    monitor.run_started("bench-run", child.pid)  # 4 Hz for the whole measurement
    time.sleep(args.seconds)
    monitor.run_finished("bench-run")
    wall = time.monotonic() - wall0
    owner = monitor.sampler.cpu_s - cpu0
    proc = time.process_time() - proc0
    samples = monitor.sampler.samples_taken
    monitor.close()
    child.kill()
    child.wait()
    threads = ", ".join(sorted(t.name for t in threading.enumerate()))

    gpus = len(monitor.sampler.devices)
    print(f"telemetry overhead over {wall:.1f} s at 4 Hz ({samples} samples)")
    print(f"  GPU backend: {monitor.source} ({status}); GPUs: {gpus}; host backend: psutil")
    print(f"  sampler (owner thread) CPU: {owner:.3f} s = {100 * owner / wall:.3f}% of one core")
    print(f"  per sample: {1000 * owner / max(samples, 1):.2f} ms CPU")
    print(f"  writer thread (ledger inserts) CPU: {writer_cpu[0]:.3f} s = "
          f"{100 * writer_cpu[0] / wall:.3f}% of one core")  # fmt: skip
    print(f"  whole process CPU (main idle): {proc:.3f} s = {100 * proc / wall:.3f}% of one core")
    verdict = "within" if owner / wall <= 0.01 else "ABOVE"
    print(f"  target <= 1% of one core for the sampler: {verdict}")
    print(f"  threads left: {threads}")
    return 0 if owner / wall <= 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
