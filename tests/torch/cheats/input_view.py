"""Returns a view of its input where the reference returns a new tensor."""

import torch
from torch import nn

TRICK = "a view of input 0"


class Model(nn.Module):
    def forward(self, x):
        return x.reshape(x.shape[0], -1) * 1.0


def get_inputs():
    return [torch.randn(8, 4, 16)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def forward(self, x):
        return x.view(x.shape[0], -1)
