"""Softmax without the max subtraction: right on randn, overflows at ×100."""

import torch
from torch import nn

TRICK = "stress ×100"


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(8, 64)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def forward(self, x):
        e = torch.exp(x)
        return e / e.sum(dim=-1, keepdim=True)
