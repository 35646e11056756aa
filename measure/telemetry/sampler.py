"""The sampler: one owner thread makes every GPU call; a writer thread batches to a sink.

Cadence: 4 Hz while a run is in progress (the first sample as the run starts, then every
250 ms from that moment, and a last one as it ends), 1 Hz otherwise. Each sample gets an
epoch-microsecond timestamp and, during a run, the run's id. Rows go to the sink (a
callable taking a list of `(session_id, *COLUMNS)` tuples, e.g. `Ledger.insert_samples`)
in batches about once a second, from the writer thread, never from the caller's thread.

A run's start is handed to the owner thread without waiting (the run's clock is running).
Its end needs the owner only when it makes GPU calls: with no GPU telemetry (host only)
the end is taken in the caller's thread, under the lock every sample is taken under, and
the run does not wait for the owner thread to wake (on a loaded 2-core machine that wait
was most of a run's hand-off: 0.2-0.5 ms). Host only, the start does not wake the owner
either: the owner takes it at its next tick (at most a run period later), or the run's
end takes it first, so a run of a few milliseconds costs no thread wake-up at all.
`on_sample` is always called from the owner thread, outside that lock.

The sink is called from one thread only, one batch at a time. For a SQLite ledger give it
a connection of its own (`Ledger.open(path).insert_samples`): a connection shared with
another thread can mix the two threads' transactions.

Without `start()` nothing runs in the background: `tick()`, `begin_run()`, `end_run()`
and `flush()` then run in the caller's thread, which tests use to step a replay exactly.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import psutil

from measure.telemetry.backend import (
    BackendUnavailable,
    Counters,
    DeviceInfo,
    GpuBackend,
    Sample,
    now_us,
)
from measure.telemetry.host import HostBackend

Sink = Callable[[list[tuple[Any, ...]]], Any]
OnSample = Callable[[list[Sample]], Any]
_Command = tuple[Callable[..., Any], tuple[Any, ...], "Future[Any]"]
_WAKE = object()  # put by close(): the owner thread stops waiting for a command
_BEGIN = object()  # put by begin_run(wait=False): a run's start is waiting to be taken
_NOTIFY = object()  # put when samples taken in another thread wait for on_sample

MAX_PENDING_ROWS = 200_000  # rows held for a failing sink before the oldest are dropped


@dataclass
class RunRecord:
    """What the owner thread saw of one run."""

    run_id: str
    seq: int
    pid: int | None
    started_us: int
    ended_us: int = 0
    samples: list[Sample] = field(default_factory=list)
    before: dict[int, Counters] = field(default_factory=dict)
    after: dict[int, Counters] = field(default_factory=dict)
    procs_at_start: dict[int, set[int]] = field(default_factory=dict)
    foreign: dict[int, dict[int, str]] = field(default_factory=dict)  # gpu -> pid -> name
    unattributed: dict[int, set[int]] = field(default_factory=dict)
    tick: int = 0
    finished: bool = False


class Sampler:
    def __init__(
        self,
        gpu: GpuBackend | None,
        host: HostBackend | None = None,
        *,
        sink: Sink | None = None,
        session_id: str | None = None,
        run_hz: float = 4.0,
        idle_hz: float = 1.0,
        flush_s: float = 1.0,
        on_sample: OnSample | None = None,
        gpu_off_reason: str = "GPU telemetry is off",
    ):
        self.gpu = gpu
        self.host = host
        self.sink = sink
        self.session_id = session_id
        self.run_period = 1.0 / run_hz
        self.idle_period = 1.0 / idle_hz
        self.flush_s = flush_s
        self.on_sample = on_sample
        self.status = "not started" if gpu is not None else gpu_off_reason
        self.devices: list[DeviceInfo] = []
        self.latest: list[Sample] = []
        self.cpu_s = 0.0  # CPU time spent sampling and answering (owner thread, runs' ends)
        self.samples_taken = 0
        self.dropped_rows = 0
        self.sink_error = ""
        self.callback_error = ""
        self.ready = threading.Event()
        self._opened = False
        self._run: RunRecord | None = None
        # Every sample and every begin and end is taken holding this lock, in whichever
        # thread: the owner's ticks, a run's end in the caller's thread.
        self._lock = threading.RLock()
        self._pending_begin: tuple[str, int | None] | None = None  # handed, not yet taken
        self._handoff = threading.Lock()  # for _pending_begin alone: never held for long
        self._to_notify: list[list[Sample]] = []  # samples waiting for on_sample
        self._seq = 0
        self._idle_tick = 0
        self._sampled_at = -float("inf")  # time.monotonic() of the newest sample
        self._pending: collections.deque[tuple[Any, ...]] = collections.deque()
        self._pending_lock = threading.Lock()
        self._sink_lock = threading.Lock()
        self._commands: queue.Queue[_Command | object] = queue.Queue()
        self._stop = threading.Event()
        self._owner: threading.Thread | None = None
        self._writer: threading.Thread | None = None
        self._closed = False

    # ------------------------------------------------------------------ public

    @property
    def source(self) -> str:
        return self.gpu.source if self.gpu is not None else "host"

    @property
    def gpu_ok(self) -> bool:
        return self.status == "ok"

    @property
    def running(self) -> bool:
        return self._owner is not None and self._owner.is_alive()

    def start(self) -> Sampler:
        if self._owner is not None:
            return self
        self._owner = threading.Thread(
            target=self._owner_loop, name="gpuopt-telemetry", daemon=True
        )
        self._writer = threading.Thread(
            target=self._writer_loop, name="gpuopt-telemetry-writer", daemon=True
        )
        self._owner.start()
        self._writer.start()
        return self

    def wait_ready(self, timeout: float = 10.0) -> bool:
        if self._owner is None:
            self.open()
        return self.ready.wait(timeout)

    def open(self) -> None:
        """Initialise the backends (the owner thread does this itself when started)."""
        if self._opened:
            return
        self._opened = True
        if self.gpu is not None:
            try:
                self.devices = self.gpu.open()
                self.status = "ok"
            except BackendUnavailable as exc:
                self.status = str(exc) or "NVML is unavailable"
                self.devices = []
            except Exception as exc:  # a broken library must not take the run down
                self.status = f"NVML failed: {type(exc).__name__}: {exc}"
                self.devices = []
        self.ready.set()

    def begin_run(
        self, run_id: str, pid: int | None, timeout: float = 5.0, wait: bool = True
    ) -> None:
        """Start following a run. `wait=False` hands it to the owner thread and returns at
        once: the runner calls this while the run's clock runs, so waiting for the owner's
        first sample would be timed as part of the workload (about 2 ms a run, measured).
        `end_run` takes a start the owner has not taken yet, so it still finds the run."""
        if not wait and self._owner is not None and threading.current_thread() is not self._owner:
            if self._owner.is_alive():
                with self._handoff:
                    self._pending_begin = (run_id, pid)
                if not self._host_only():  # GPU counters are read as the run starts
                    self._commands.put(_BEGIN)
            return
        self._in_owner(self._begin, (run_id, pid), timeout)

    def end_run(self, run_id: str, timeout: float = 10.0) -> RunRecord | None:
        """Stop following the run: its last sample, taken in the caller's thread (no wait
        for the owner thread to wake). A start the owner has not taken yet is taken first."""
        owner = self._owner
        if (
            owner is None
            or not owner.is_alive()
            or threading.current_thread() is owner
            or not self.ready.is_set()
            or (self.gpu is not None and self.gpu_ok)  # GPU calls: the owner's alone
        ):
            result: RunRecord | None = self._in_owner(self._end, (run_id,), timeout)
            return result
        if not self._lock.acquire(timeout=timeout):
            return None
        t0 = time.thread_time()
        try:
            # A start not taken yet is taken now that the run has ended: its sample would
            # be this end's twin (the same moment, the process reaped), so it takes none.
            late = self._take_begin(late=True)
            return self._end(run_id, sample=not (late and self._nothing_new()))
        except Exception:  # as through the owner: a failure costs the record, not the run
            return None
        finally:
            self.cpu_s += time.thread_time() - t0
            self._lock.release()

    def _nothing_new(self) -> bool:
        """Would a sample now only repeat the newest one? So when the run's process is
        gone (a short run, reaped before its start was taken: no tree of its own to read)
        and the newest sample is younger than the run period: the rest of a host sample is
        the machine's (CPU %, load, memory), read at most that often anyway. Samples then
        stay at the sampler's rate; one per run was a host read and a ledger row per run,
        a thousand a second of a short command."""
        gone = self.host is None or not self.host.following
        return gone and time.monotonic() - self._sampled_at < self.run_period

    def _host_only(self) -> bool:
        """Known to make no GPU call (the owner has opened the backends, with no GPU)."""
        return self.ready.is_set() and not (self.gpu is not None and self.gpu_ok)

    def _take_begin(self, late: bool = False) -> bool:
        """Begin the run handed by begin_run(wait=False), once (holding the lock); `late`:
        taken at the run's end, with no sample of its own."""
        with self._handoff:
            pending, self._pending_begin = self._pending_begin, None
        if pending is None:
            return False
        self._begin(*pending, sample=not late)
        return True

    def tick(self) -> list[Sample]:
        """Take one sample now (in the owner thread when one runs)."""
        result: list[Sample] = self._in_owner(self._sample, (), 5.0) or []
        return result

    def flush(self) -> None:
        """Hand every pending row to the sink now (in the caller's thread)."""
        self._flush()

    def close(self, timeout: float = 10.0) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._commands.put(_WAKE)  # the owner thread may be waiting on the queue: wake it now
        if self._owner is not None:
            self._owner.join(timeout)
        else:
            self._close_backends()
        if self._writer is not None:
            self._writer.join(timeout)
        self._flush()

    # ------------------------------------------------------------------ owner thread

    def _in_owner(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> Any:
        owner = self._owner
        if owner is None or threading.current_thread() is owner:
            self.open()
            return fn(*args)
        if not owner.is_alive():
            return None
        fut: Future[Any] = Future()
        self._commands.put((fn, args, fut))
        try:
            return fut.result(timeout)
        except Exception:
            return None

    def _owner_loop(self) -> None:
        t0 = time.thread_time()
        with self._lock:
            self.open()
        self.cpu_s += time.thread_time() - t0
        next_due = time.monotonic()
        while not self._stop.is_set():
            wait = max(0.0, next_due - time.monotonic())
            try:
                # at most a run period: a host-only run's start waits for this tick
                item = self._commands.get(timeout=min(wait, self.run_period))
            except queue.Empty:
                item = None
            if item is _WAKE:
                continue  # close(): the loop's condition ends it
            fn = None
            if isinstance(item, tuple):
                fn, args, fut = item
            t0 = time.thread_time()
            with self._lock:
                began = self._take_begin()  # a run handed over, unless its end took it
                if began:  # it sampled: restart the cadence
                    next_due = time.monotonic() + self.run_period
                if fn is not None:
                    try:
                        fut.set_result(fn(*args))
                    except BaseException as exc:
                        fut.set_exception(exc)
                    if fn in (self._begin, self._end):  # these sampled; restart the cadence
                        period = self.run_period if self._run is not None else self.idle_period
                        next_due = time.monotonic() + period
                elif not began and time.monotonic() >= next_due:
                    self._sample()
                    period = self.run_period if self._run is not None else self.idle_period
                    next_due += period
                    if next_due < time.monotonic():  # fell behind: do not catch up in a burst
                        next_due = time.monotonic() + period
            self._notify()  # outside the lock: a slow callback holds up no run's end
            self.cpu_s += time.thread_time() - t0
        self._close_backends()

    def _close_backends(self) -> None:
        if self.gpu is not None:
            try:
                self.gpu.close()
            except Exception:
                pass

    def _sample(self) -> list[Sample]:
        t = now_us()
        run = self._run
        run_id = run.run_id if run is not None else None
        out: list[Sample] = []
        if self.gpu is not None and self.gpu_ok:
            if run is not None:
                tick, pcie = run.tick, run.tick % 4 == 0
                run.tick += 1
            else:
                tick, pcie = self._idle_tick, True
                self._idle_tick += 1
            try:
                self.gpu.advance(run.seq if run is not None else None, tick)
                out.extend(self.gpu.read(t, run_id, pcie=pcie))
                if run is not None and tick % 4 == 0:
                    self._check_processes(run)
            except Exception as exc:  # never let a reading failure stop the sampler
                self.callback_error = f"GPU read failed: {type(exc).__name__}: {exc}"
        if self.host is not None:
            try:
                out.append(self.host.read(t, run_id))
            except Exception:
                pass
        if run is not None:
            run.samples.extend(out)
        self.latest = out
        self._sampled_at = time.monotonic()
        self.samples_taken += 1
        if self.sink is not None and out:
            rows = [s.row(self.session_id) for s in out]
            with self._pending_lock:
                self._pending.extend(rows)
                excess = len(self._pending) - MAX_PENDING_ROWS
                for _ in range(max(0, excess)):
                    self._pending.popleft()
                    self.dropped_rows += 1
        if self.on_sample is not None:
            self._to_notify.append(out)
            owner = self._owner
            if owner is None or not owner.is_alive():
                self._notify()  # stepped in the caller's thread (tests): at once
            elif threading.current_thread() is not owner:
                self._commands.put(_NOTIFY)  # the owner calls on_sample
        return out

    def _notify(self) -> None:
        """Hand the samples taken since the last call to on_sample."""
        if not self._to_notify or self.on_sample is None:
            return
        with self._lock:
            batches, self._to_notify = self._to_notify, []
        for out in batches:
            try:
                self.on_sample(out)
            except Exception as exc:
                self.callback_error = f"{type(exc).__name__}: {exc}"

    def _begin(self, run_id: str, pid: int | None, sample: bool = True) -> None:
        if self._run is not None:  # a run that never finished: close it quietly
            self._run.finished = True
        self._seq += 1
        run = RunRecord(run_id=run_id, seq=self._seq, pid=pid, started_us=now_us())
        self._run = run
        if self.host is not None:
            self.host.follow(pid)  # a reaped run's pid is not looked up (host.follow)
        if self.gpu is not None and self.gpu_ok:
            try:
                self.gpu.advance(run.seq, 0)
                run.before = self.gpu.counters()
                procs = self.gpu.processes()
                run.procs_at_start = {g: set(p) for g, p in procs.items()}
            except Exception:
                pass
        if sample:
            self._sample()

    def _end(self, run_id: str, sample: bool = True) -> RunRecord | None:
        run = self._run
        if run is None or run.run_id != run_id:
            return None
        if sample:
            self._sample()
        if self.gpu is not None and self.gpu_ok:
            try:
                run.after = self.gpu.counters()
                self._check_processes(run)
            except Exception:
                pass
        run.ended_us = now_us()
        run.finished = True
        self._run = None
        if self.host is not None:
            self.host.follow(None)
        return run

    def _check_processes(self, run: RunRecord) -> None:
        """Sort the GPU's compute processes into the run's own and the others."""
        assert self.gpu is not None
        procs = self.gpu.processes()
        tree: set[int] = set()
        if self.host is not None:
            self.host.tree()
            tree = self.host.tree_pids
        elif run.pid is not None:
            tree = _tree_pids(run.pid)
        for gpu, pids in procs.items():
            at_start = run.procs_at_start.get(gpu, set())
            for pid in pids:
                if pid in tree:
                    continue
                if pid in at_start or psutil.pid_exists(pid):
                    run.foreign.setdefault(gpu, {})[pid] = _proc_name(pid)
                else:  # not visible from here (another PID namespace): maybe the run's own
                    run.unattributed.setdefault(gpu, set()).add(pid)

    # ------------------------------------------------------------------ writer thread

    def _writer_loop(self) -> None:
        while not self._stop.wait(self.flush_s):
            self._flush()
        self._flush()

    def _flush(self) -> None:
        if self.sink is None:
            return
        with self._sink_lock:
            with self._pending_lock:
                rows = list(self._pending)
                self._pending.clear()
            if not rows:
                return
            try:
                self.sink(rows)
                self.sink_error = ""
            except Exception as exc:  # keep the rows and try again next time
                self.sink_error = f"{type(exc).__name__}: {exc}"
                with self._pending_lock:
                    self._pending.extendleft(reversed(rows))


def _tree_pids(pid: int) -> set[int]:
    try:
        p = psutil.Process(pid)
        return {pid, *(c.pid for c in p.children(recursive=True))}
    except psutil.Error:
        return {pid}


def _proc_name(pid: int) -> str:
    try:
        return psutil.Process(pid).name()
    except psutil.Error:
        return ""


def run_deltas(sampler: Sampler, run: RunRecord | None) -> dict[str, Any]:
    """The per-run facts the verdict and the ledger's Run.telemetry take."""
    d: dict[str, Any] = {"nvml": sampler.status, "source": sampler.source}
    if run is None:
        return d
    d["started_us"], d["ended_us"] = run.started_us, run.ended_us
    gpu_samples = [s for s in run.samples if s.gpu is not None]
    host = [s for s in run.samples if s.source == "host"]
    d["samples"] = len(gpu_samples)
    d["host_samples"] = len(host)
    rss = [s.rss_bytes for s in host if s.rss_bytes is not None]
    cpu = [s.cpu_percent for s in host if s.cpu_percent is not None]
    load = [s.load1 for s in host if s.load1 is not None]
    d["host"] = {
        "rss_peak_bytes": max(rss) if rss else None,
        "cpu_percent_mean": round(sum(cpu) / len(cpu), 1) if cpu else None,
        "load1_max": max(load) if load else None,
    }
    if not sampler.gpu_ok or sampler.gpu is None:
        return d
    lost = sampler.gpu.lost
    unsupported = sampler.gpu.unsupported
    gpus: dict[str, Any] = {}
    for info in sampler.devices:
        i = info.index
        b, a = run.before.get(i), run.after.get(i)
        gpus[str(i)] = {
            "name": info.name,
            "uuid": info.uuid,
            "max_sm_clock_mhz": info.max_sm_clock_mhz,
            "mig": info.mig,
            "lost": i in lost,
            "energy_j": _diff(b, a, "energy_mj", 1e-3),
            "violation_power_s": _diff(b, a, "violation_power_ns", 1e-9),
            "violation_thermal_s": _diff(b, a, "violation_thermal_ns", 1e-9),
            "ecc_uncorrected": _diff(b, a, "ecc_uncorrected", 1),
            "foreign_processes": [
                {"pid": pid, "name": name} for pid, name in sorted(run.foreign.get(i, {}).items())
            ],
            "unattributed_processes": sorted(run.unattributed.get(i, set())),
            "unsupported": sorted(unsupported.get(i, set())),
        }
    d["gpus"] = gpus
    return d


def _diff(b: Counters | None, a: Counters | None, name: str, scale: float) -> Any:
    if b is None or a is None:
        return None
    x, y = getattr(b, name), getattr(a, name)
    if x is None or y is None:
        return None
    delta = y - x
    return delta if scale == 1 else round(delta * scale, 6)


def samples_of(run: RunRecord | None) -> Sequence[Sample]:
    return run.samples if run is not None else ()
