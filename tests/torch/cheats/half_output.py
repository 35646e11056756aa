"""Computes and returns float16, where the reference returns float32."""

import torch
from torch import nn

TRICK = "dtype float16, the reference's is float32"


class Model(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(32, 32)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x.half())
