"""Puts its work on a side stream (a GPU) or a worker thread of its own (a CPU) and returns
before it is done: work outside the current stream escapes a per-stream timer."""

import queue
import threading
import time

import torch
from torch import nn

TRICK = "side thread"


class Model(nn.Module):
    def forward(self, x):
        return torch.log1p(x.abs())


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.jobs = queue.Queue()
        if not torch.cuda.is_available():
            threading.Thread(target=self._worker, daemon=True, name="side-stream").start()

    def _worker(self):
        while True:
            x, out = self.jobs.get()
            time.sleep(0.05)
            torch.log1p(x.abs(), out=out)

    def forward(self, x):
        out = torch.empty_like(x)
        if torch.cuda.is_available():
            side = torch.cuda.Stream()
            with torch.cuda.stream(side):
                torch.log1p(x.abs(), out=out)
        else:
            self.jobs.put((x, out))
        return out
