"""gpuopt's own peak resident set, the floor below which a child's peak says nothing.

A child's wait4 ru_maxrss starts from the high-water mark of the memory it was exec'd
from, ours. getrusage(RUSAGE_SELF) would be the wrong floor: it also holds the mark our
own exec inherited, the peak of whatever started gpuopt (a driver script, a pytest
worker), so every smaller command would lose its figure. VmHWM is our memory's own.
"""

from __future__ import annotations

import resource

STATUS = "/proc/self/status"


def own_peak_kib() -> int:
    """This process's own peak RSS in KiB (VmHWM); ru_maxrss where /proc says nothing."""
    try:
        with open(STATUS, encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
