"""Copies its weights at construction and uses the copy: later weights never reach it."""

import torch
from torch import nn

TRICK = "mismatches"


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return self.lin(x)


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return [16]


# --- candidate ---
class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.frozen = (self.lin.weight.detach().clone(), self.lin.bias.detach().clone())

    def forward(self, x):
        w, b = self.frozen
        return x @ w.t() + b
