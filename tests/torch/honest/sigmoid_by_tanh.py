"""An algebraic rewrite: sigmoid(x) = (tanh(x / 2) + 1) / 2."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def forward(self, x):
        return 0.5 * (torch.tanh(0.5 * x) + 1.0)
