"""A reduction in a random order on every call (as atomics would): the last bits change."""

import torch
from torch import nn

TRICK = "nondeterministic"


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=-1)


def get_inputs():
    return [torch.randn(16, 4096)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def forward(self, x):
        order = torch.randperm(x.shape[-1], device=x.device)
        parts = x[:, order].reshape(x.shape[0], 64, -1).sum(dim=-1)
        return parts.sum(dim=-1)
