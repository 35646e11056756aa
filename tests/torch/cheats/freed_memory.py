"""Computes once, then returns uninitialised memory of the right size, which holds the last
result whenever the allocator hands back the block the reference (or it) just freed."""

import torch
from torch import nn

TRICK = "freed memory"


class Model(nn.Module):
    def forward(self, x):
        return x * x + 0.5


def get_inputs():
    return [torch.randn(128, 128)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 1:
            return x * x + 0.5
        return torch.empty_like(x)
