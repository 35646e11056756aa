"""The host backend (psutil): CPU %, per-core frequency, load, memory, and the run's RSS.

Always on, GPU or not. The run's process tree is followed from the pid the engine gives
at `run_started`; every pid ever seen in the tree is remembered, so a GPU process that
belonged to a child which has since exited is still recognised as the run's own.
"""

from __future__ import annotations

import os
import time
from typing import Any

import psutil

from measure.telemetry.backend import Sample

MEMORY_EVERY_S = 0.1  # as the CPU percentage: no sample needs fresher host memory
# Per-core frequencies (sysfs, one file a core: ~0.15 ms) at the sampler's run rate at most:
# every 4th sample was every other run of a short command, whose runs take two samples each.
FREQ_EVERY_S = 0.25


class HostBackend:
    source = "host"

    def __init__(self, freq_every_s: float = FREQ_EVERY_S):
        self._freq_every_s = freq_every_s  # per-core frequency at most this often
        self._freq_at = -float("inf")
        self._root: psutil.Process | None = None
        self._procs: dict[int, psutil.Process] = {}
        self.tree_pids: set[int] = set()
        self._last_freq: list[float] | None = None
        self._freq_ok = True
        psutil.cpu_percent(interval=None)  # prime the counter: the next call has a base
        self._cpu_at = time.monotonic()
        self._cpu: float | None = None
        # Host memory, read at most every MEMORY_EVERY_S: parsing /proc/meminfo was half of
        # a sample, and every run pays two samples (begin and end) on its critical path.
        self._mem: dict[str, int] = {}
        self._mem_at = -float("inf")

    def follow(self, pid: int | None) -> None:
        """Start following a run's process tree (None: stop)."""
        self.tree_pids = set()
        self._root = None
        self._procs = {}
        if pid is None:
            return
        if _PROC and not os.path.exists(f"/proc/{pid}"):
            return  # reaped already (a short run): psutil would raise, at ~0.1 ms a run
        try:
            self._root = psutil.Process(pid)
            self.tree_pids.add(pid)
        except (psutil.Error, ValueError):
            self._root = None

    @property
    def following(self) -> bool:
        """Is a run's process being followed (its pid was there to look up)?"""
        return self._root is not None

    def tree(self) -> list[psutil.Process]:
        """The live processes of the run's tree; also records their pids."""
        root = self._root
        if root is None:
            return []
        pids = _descendants(root.pid)
        if pids is None:  # no /proc/PID/task/TID/children here: psutil scans every process
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                return []
        else:
            procs = [root]
            for pid in pids:
                proc = self._procs.get(pid)
                if proc is None:
                    try:
                        proc = self._procs[pid] = psutil.Process(pid)
                    except psutil.Error:
                        continue
                procs.append(proc)
        self.tree_pids.update(p.pid for p in procs)
        return procs

    def read(self, t_us: int, run_id: str | None) -> Sample:
        s = Sample(run_id=run_id, t_us=t_us, source="host")
        now = time.monotonic()
        if now - self._cpu_at >= 0.1 or self._cpu is None:  # shorter: too noisy to mean much
            self._cpu = psutil.cpu_percent(interval=None)
            self._cpu_at = now
        s.cpu_percent = self._cpu
        try:
            s.load1 = os.getloadavg()[0]
        except OSError:
            s.load1 = None
        extra: dict[str, Any] = dict(self._host_memory(now))
        if self._freq_ok and now - self._freq_at >= self._freq_every_s:
            self._last_freq = self._core_freqs()
            self._freq_at = now
        if self._last_freq:
            extra["core_mhz"] = self._last_freq
        if self._root is not None:
            rss = 0
            seen = False
            for p in self.tree():
                try:
                    rss += p.memory_info().rss
                    seen = True
                except psutil.Error:
                    continue
            s.rss_bytes = rss if seen else None
        s.extra = extra
        return s

    def _host_memory(self, now: float) -> dict[str, int]:
        if now - self._mem_at >= MEMORY_EVERY_S or not self._mem:
            try:
                vm = psutil.virtual_memory()
                self._mem = {
                    "host_mem_used_bytes": int(vm.total - vm.available),
                    "host_mem_total_bytes": int(vm.total),
                }
            except Exception:
                self._mem = {}
            self._mem_at = now
        return self._mem

    def _core_freqs(self) -> list[float] | None:
        try:
            freqs = psutil.cpu_freq(percpu=True)
        except Exception:
            freqs = None
        if not freqs:
            self._freq_ok = False  # not readable here: do not ask again
            return None
        return [round(f.current, 1) for f in freqs]


_PROC = os.path.isdir(f"/proc/{os.getpid()}")  # Linux: a live pid has its directory
_CHILDREN_FILES = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def _descendants(pid: int) -> list[int] | None:
    """Every descendant of pid, from /proc/PID/task/TID/children (Linux): cheap, unlike a
    scan of every process. None where the kernel does not offer those files."""
    if not _CHILDREN_FILES:
        return None
    out: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except (OSError, ValueError):
                continue
            out.extend(kids)
            todo.extend(kids)
    return out
