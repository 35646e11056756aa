"""Benchmark of the app's own costs, in a real pseudo-terminal.

    .venv/bin/python -m tests.benchmarks.tui_startup [--seconds 20] [--hz 4] [--starts 9]

Prints: time to first frame (process start to the first screen with the step rail; target
<= 1 s) as the median and range of several starts, beside the same figure for a bare
Textual app (one Static and a Footer: the floor that Python and Textual set on this
machine); idle CPU of the UI process with the telemetry panel live at 4 Hz on the host
backend (target <= 3% of one core); and whether torch was ever imported (it must not be).
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BARE = """
from textual.app import App
from textual.widgets import Footer, Static

class Bare(App):
    def compose(self):
        yield Static("Hypotheses")
        yield Footer()

Bare().run()
"""

BARE_TICK = """
from textual.app import App
from textual.widgets import Footer, Static

class Bare(App):
    def compose(self):
        yield Static("Hypotheses", id="s")
        yield Footer()

    def on_mount(self):
        self.n = 0
        self.set_interval(1 / HZ, self.tick)

    def tick(self):
        self.n += 1
        self.query_one("#s", Static).update("Hypotheses " + "▁▂▃▄▅▆▇█"[self.n % 8] * 40)

Bare().run()
"""

CHILD = """
import sys
from tui.app import GpuoptApp
app = GpuoptApp(sys.argv[1], session_id=sys.argv[2], telemetry="live")  # measure.telemetry's rates
app.run()
with open(sys.argv[4], "w") as f:
    f.write("torch imported" if "torch" in sys.modules else "no torch")
"""


def read_until(fd: int, needle: bytes, timeout: float) -> tuple[bool, bytes]:
    buf = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            buf += chunk
            if needle in buf:
                return True, buf
    return False, buf


def drain(fd: int, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                os.read(fd, 65536)
            except OSError:
                return


def start(argv: list[str], env: dict[str, str]) -> tuple[int, subprocess.Popen[bytes], float]:
    """Start a program on a new 120x40 pseudo-terminal: (master fd, process, first frame s)."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    os.set_blocking(master, True)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT, start_new_session=True
    )
    os.close(slave)
    ok, _ = read_until(master, b"Hypotheses", 30)
    return master, proc, (time.monotonic() - t0) if ok else float("nan")


def first_frame(argv: list[str], env: dict[str, str]) -> float:
    master, proc, first = start(argv, env)
    os.write(master, b"\x11")  # ctrl+q
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    drain(master, 0.1)
    os.close(master)
    return first


def idle_cpu(argv: list[str], env: dict[str, str], seconds: float) -> float:
    """CPU of a program over `seconds`, after 3 s to settle, as % of one core."""
    import psutil

    master, proc, _ = start(argv, env)
    drain(master, 3.0)
    p = psutil.Process(proc.pid)
    c0, w0 = sum(p.cpu_times()[:2]), time.monotonic()
    drain(master, seconds)
    cpu = (sum(p.cpu_times()[:2]) - c0) / (time.monotonic() - w0) * 100
    proc.kill()
    proc.wait()
    os.close(master)
    return cpu


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--hz", type=float, default=4.0)
    ap.add_argument("--starts", type=int, default=9, help="starts timed for the first frame")
    args = ap.parse_args()
    import psutil

    from ledger import Ledger
    from tests.tui.sample_session import SID, build_sample

    tmp = Path(tempfile.mkdtemp())
    db = tmp / "ledger.db"
    with Ledger.open(db) as ledger:
        build_sample(ledger)
    marker = tmp / "modules.txt"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TERM": "xterm-256color",
        "COLUMNS": "120",
        "LINES": "40",
    }
    app_argv = [sys.executable, "-c", CHILD, str(db), SID, str(args.hz), str(marker)]
    bare_argv = [sys.executable, "-c", BARE]
    firsts: list[float] = []
    bares: list[float] = []
    for _ in range(max(args.starts - 1, 0)):  # alternate, so that both see the same noise
        bares.append(first_frame(bare_argv, env))
        firsts.append(first_frame(app_argv, env))
    bares.append(first_frame(bare_argv, env))
    master, proc, first = start(app_argv, env)
    firsts.append(first)
    drain(master, 3.0)  # settle
    p = psutil.Process(proc.pid)
    c0 = sum(p.cpu_times()[:2])
    w0 = time.monotonic()
    drain(master, args.seconds)
    cpu = (sum(p.cpu_times()[:2]) - c0) / (time.monotonic() - w0) * 100
    bare_cpu = idle_cpu([sys.executable, "-c", f"HZ = {args.hz}\n" + BARE_TICK], env, args.seconds)
    os.write(master, b"\x11")  # ctrl+q
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    drain(master, 0.2)
    os.close(master)
    torch = marker.read_text() if marker.exists() else "unknown (the app did not exit cleanly)"
    ok = all(f == f for f in firsts)  # NaN: no frame seen
    print(
        f"time to first frame: median {statistics.median(firsts):.2f} s over {len(firsts)} "
        f"starts (range {min(firsts):.2f}-{max(firsts):.2f}; target <= 1 s)"
    )
    print(
        f"  a bare Textual app on this machine: median {statistics.median(bares):.2f} s "
        f"(range {min(bares):.2f}-{max(bares):.2f})"
    )
    print(
        f"idle CPU with telemetry at {args.hz:g} Hz: {cpu:.1f}% of one core "
        f"over {args.seconds:g} s (target <= 3%)"
    )
    print(
        f"  a bare Textual app redrawing one line at {args.hz:g} Hz: {bare_cpu:.1f}% "
        "(the floor of Python and Textual here)"
    )
    print(f"torch in the UI process: {torch}")
    print(f"load average during the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    return 0 if ok and torch == "no torch" else 1


if __name__ == "__main__":
    sys.exit(main())
