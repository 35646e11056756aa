"""Returns uninitialised memory of the output's shape, computing nothing."""

import torch
from torch import nn

TRICK = "mismatches"


class Model(nn.Module):
    def forward(self, x):
        return torch.abs(x) * 0.5


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.empty_like(x)
