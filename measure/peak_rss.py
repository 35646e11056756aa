"""gpuopt's own peak resident set, the floor below which a child's peak says nothing.

A child's wait4 ru_maxrss starts from the high-water mark of the memory it was exec'd
from, ours. getrusage(RUSAGE_SELF) would be the wrong floor: it also holds the mark our
own exec inherited, the peak of whatever started gpuopt (a driver script, a pytest
worker), so every smaller command would lose its figure. VmHWM is our memory's own.
"""

from __future__ import annotations

import functools
import os
import resource
import threading

STATUS = "/proc/self/status"

# The status file stays open and is read again from its start (a pread): opening it was
# most of the cost, paid before every run. /proc/self is resolved at open, so the file is
# the opener's: a forked child opens its own.
_status: tuple[int, int] | None = None  # (pid that opened it, fd)
_lock = threading.Lock()


@functools.cache
def counter_slack_kib() -> int:
    """How far the mark a child inherits can sit above our VmHWM, in KiB.

    The kernel counts an address space's pages per CPU and folds each CPU's count into the
    total in batches of max(32, 2 x CPUs) pages; a child's exec records the batched total,
    while /proc may report the exact sum. Three counters (anonymous, file, shared memory)
    on each CPU can each hold up to one batch: that bound, in KiB. A figure within it of
    our mark is ours, not the command's (a CI run saw `true` read the pytest worker's size).
    """
    cpus = os.cpu_count() or 1
    page_kib = resource.getpagesize() // 1024
    return 3 * cpus * max(32, 2 * cpus) * page_kib


# getrusage(RUSAGE_SELF).ru_maxrss is max(the inherited mark, VmHWM), one cheap system call
# where the status file is formatted whole (about 20 µs on the run's clock, at every run).
# Once a read of both shows the inherited mark at or below VmHWM, it stays so (VmHWM only
# grows), and ru_maxrss is VmHWM from then on: the usual case, gpuopt started by a shell.
_rusage_is_ours: int | None = None  # the pid for which ru_maxrss is known to be VmHWM


def own_peak_kib() -> int:
    """This process's own peak RSS in KiB (VmHWM); ru_maxrss where /proc says nothing."""
    global _rusage_is_ours
    pid = os.getpid()
    if _rusage_is_ours == pid:
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    both = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # before VmHWM is read
    hwm = _status_hwm_kib()
    if hwm is None:
        return both
    if both <= hwm:  # the inherited mark is no higher than VmHWM, now and from now on
        _rusage_is_ours = pid
    return hwm


def _status_hwm_kib() -> int | None:
    """VmHWM from the status file (kept open), or None where /proc says nothing."""
    global _status
    try:
        with _lock:
            pid = os.getpid()
            if _status is None or _status[0] != pid:
                _status = (pid, os.open(STATUS, os.O_RDONLY | os.O_CLOEXEC))
            data = os.pread(_status[1], 8192, 0)
            if f"\nPid:\t{pid}\n".encode() not in data:
                # the number was closed by other code and now names another file (a
                # double close elsewhere): reading it would give a floor not ours
                _status = (pid, os.open(STATUS, os.O_RDONLY | os.O_CLOEXEC))
                data = os.pread(_status[1], 8192, 0)
        at = data.find(b"VmHWM:")
        if at >= 0:
            return int(data[at + 6 : data.index(b"kB", at)])
    except (OSError, ValueError):
        pass
    return None
