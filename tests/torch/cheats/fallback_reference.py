"""Tries a custom kernel that does not exist and falls back, silently, to the reference's
code: the timing is the reference's, the result always right."""

import torch
from torch import nn

TRICK = "try/except fallback"


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def forward(self, x):
        try:
            return torch.ops.gpuopt_cheats.fast_softmax(x)
        except (AttributeError, RuntimeError):
            return torch.softmax(x, dim=-1)
