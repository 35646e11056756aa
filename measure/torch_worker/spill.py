"""One call's outputs written raw to a file and read back in chunks with plain reads.

The repeat check calls the step again on the same inputs and counts the elements the two
calls disagree on. Holding the first call's outputs while the second runs is two outputs
beside the inputs and the weights; spilled, the first call's outputs live in the page
cache (which is not this process's memory), are compared a chunk at a time, and come back
as the trial's outputs once the inputs and the weights are gone. A candidate that writes
into the buffer it returned last time cannot change the spilled copy either.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import torch

from .base import _INT_OF, CHUNK


class Spill:
    """The outputs of one call in a file of their own (removed by `close`)."""

    def __init__(self, outs: dict[str, torch.Tensor], folder: str):
        fd, self.path = tempfile.mkstemp(prefix="gpuopt-repeat-", suffix=".raw", dir=folder)
        self.layout: dict[str, tuple[torch.dtype, tuple[int, ...], int]] = {}
        try:
            with os.fdopen(fd, "wb") as f:
                for name, t in outs.items():
                    flat = _bytes(t)
                    self.layout[name] = (t.dtype, tuple(t.shape), f.tell())
                    for lo in range(0, flat.numel(), _STEP):
                        part = flat[lo : lo + _STEP]
                        buf = bytearray(part.numel())
                        torch.frombuffer(buf, dtype=torch.uint8).copy_(part)
                        f.write(buf)
        except BaseException:
            self.close()
            raise

    def _parts(self, name: str) -> Any:
        """(element offset, the spilled elements as uint8 bytes) of output `name`, in chunks."""
        dtype, shape, offset = self.layout[name]
        size = torch.empty((), dtype=dtype).element_size()
        numel = 1
        for d in shape:
            numel *= d
        with open(self.path, "rb") as f:
            f.seek(offset)
            for lo in range(0, numel, CHUNK):
                count = min(CHUNK, numel - lo)
                buf = bytearray(count * size)
                if f.readinto(buf) != len(buf):
                    raise OSError(f"{self.path}: short read of the spilled output {name}")
                yield lo, torch.frombuffer(buf, dtype=torch.uint8)

    def diffs(self, other: dict[str, torch.Tensor]) -> dict[str, int]:
        """Per output, the elements `other` disagrees on bit for bit (all when it lacks the
        output or its shape or dtype differ)."""
        out = {}
        for name, (dtype, shape, _) in self.layout.items():
            t = other.get(name)
            numel = max(1, _numel(shape))
            if t is None or t.dtype != dtype or tuple(t.shape) != shape:
                out[name] = numel
                continue
            size = t.element_size()
            flat = _bytes(t)
            n = 0
            for lo, spilled in self._parts(name):
                mine = flat[lo * size : lo * size + spilled.numel()]
                n += _differing(spilled, mine, size)
            if n:
                out[name] = n
        return out

    def load(self) -> dict[str, torch.Tensor]:
        """The spilled outputs as tensors of their own (contiguous, on the CPU)."""
        out = {}
        for name, (dtype, shape, _) in self.layout.items():
            t = torch.empty(shape, dtype=dtype)
            flat = _bytes(t)
            size = t.element_size()
            for lo, spilled in self._parts(name):
                flat[lo * size : lo * size + spilled.numel()].copy_(spilled)
            out[name] = t
        return out

    def close(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass


_STEP = CHUNK * 8  # bytes written at once


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor's elements as a flat uint8 view (a contiguous copy if it is not one)."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.to("cpu")
    t = t.contiguous().reshape(-1)
    if t.numel() == 0:
        return torch.empty(0, dtype=torch.uint8)
    return t.view(torch.uint8)


def _differing(a: torch.Tensor, b: torch.Tensor, size: int) -> int:
    """Elements of `size` bytes that differ between two uint8 views of equal length."""
    width = _INT_OF.get(size * 8)
    if width is not None:
        return int((a.view(width) != b.view(width)).sum())
    return int((a.reshape(-1, size) != b.reshape(-1, size)).any(dim=1).sum())
