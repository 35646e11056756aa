"""Replaces time.perf_counter with a clock that runs a hundred times slower."""

import time

import torch
from torch import nn

TRICK = "replaced time.perf_counter"


class Model(nn.Module):
    def forward(self, x):
        return torch.cos(x)


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.cos(x)


_real = time.perf_counter
_start = _real()
time.perf_counter = lambda: _start + (_real() - _start) / 100.0
