"""Writes its result into its input and returns it (no allocation, and the input is gone)."""

import torch
from torch import nn

TRICK = "input 0"


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(32, 32)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def forward(self, x):
        return x.relu_()
