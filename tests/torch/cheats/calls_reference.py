"""Calls the reference Model itself instead of a new kernel."""

import torch
from torch import nn

TRICK = "calls the reference Model"


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return torch.relu(self.lin(x))


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [32]


# --- candidate ---
class ModelNew(Model):
    def forward(self, x):
        return Model.forward(self, x)
