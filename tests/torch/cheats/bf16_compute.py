"""Computes in bfloat16 and casts back, so the dtype looks right."""

import torch
from torch import nn

TRICK = "mismatches"


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return torch.tanh(self.lin(x))


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [32]


# --- candidate ---
class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        w, b = self.lin.weight.bfloat16(), self.lin.bias.bfloat16()
        return torch.tanh(x.bfloat16() @ w.t() + b).float()
