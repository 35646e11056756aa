"""Redefines get_inputs() with smaller inputs, so that it is timed on less work."""

import torch
from torch import nn

TRICK = "redefines get_inputs()"


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1.0


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1.0


def get_inputs():  # noqa: F811  (the trick: a tenth of the work)
    return [torch.randn(8, 16)]
