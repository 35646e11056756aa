"""Wrong on a quarter of its calls, chosen by Python's `random` (a race, in effect)."""

import random

import torch
from torch import nn

TRICK = "differ"


class Model(nn.Module):
    def forward(self, x):
        return x * 3.0 - 1.0


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def forward(self, x):
        out = x * 3.0 - 1.0
        if random.random() < 0.25:
            out.view(-1)[random.randrange(out.numel())] += 0.5
        return out
