"""An identical-code control: the candidate is the reference."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return torch.tanh(self.lin(x)) * 0.5


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return [16]


# --- candidate ---
class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return torch.tanh(self.lin(x)) * 0.5
