"""One GPU of a box, chosen by UUID or index: telemetry that watches it and no other.

The contract names the GPU a session measures on (`--gpu`), and the runner gives it to
the workload through CUDA_VISIBLE_DEVICES; this backend makes the sampler follow the
same GPU: its samples, counters, processes (a foreign process on it is flagged per run)
and losses, and nothing of the GPUs beside it, which other sessions may be using.
"""

from __future__ import annotations

from measure.telemetry.backend import BackendUnavailable, Counters, DeviceInfo, GpuBackend, Sample

__all__ = ["ChosenGpu", "matches"]


def matches(info: DeviceInfo, choice: str) -> bool:
    """A GPU named by its index ("1"), its UUID, or a unique start of its UUID."""
    choice = choice.strip()
    return choice == str(info.index) or bool(
        info.uuid and (choice == info.uuid or (len(choice) >= 8 and info.uuid.startswith(choice)))
    )


class ChosenGpu:
    """A GpuBackend that passes on the readings of one GPU of another backend."""

    def __init__(self, inner: GpuBackend, choice: str) -> None:
        self.inner = inner
        self.choice = choice
        self.source = inner.source
        self._index: int | None = None

    def open(self) -> list[DeviceInfo]:
        devices = self.inner.open()
        found = [d for d in devices if matches(d, self.choice)]
        if len(found) != 1:
            listed = ", ".join(f"{d.index} {d.uuid}" for d in devices) or "none"
            self.inner.close()
            raise BackendUnavailable(f"no single GPU {self.choice} here (GPUs: {listed})")
        self._index = found[0].index
        return found

    def advance(self, run_seq: int | None, tick: int) -> None:
        self.inner.advance(run_seq, tick)

    def read(self, t_us: int, run_id: str | None, pcie: bool = True) -> list[Sample]:
        return [s for s in self.inner.read(t_us, run_id, pcie) if s.gpu == self._index]

    def counters(self) -> dict[int, Counters]:
        return {i: c for i, c in self.inner.counters().items() if i == self._index}

    def processes(self) -> dict[int, list[int]]:
        return {i: p for i, p in self.inner.processes().items() if i == self._index}

    @property
    def lost(self) -> set[int]:
        return {i for i in self.inner.lost if i == self._index}

    @property
    def unsupported(self) -> dict[int, set[str]]:
        return {i: u for i, u in self.inner.unsupported.items() if i == self._index}

    def close(self) -> None:
        self.inner.close()
