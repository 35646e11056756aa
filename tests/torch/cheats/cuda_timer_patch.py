"""Replaces torch.cuda.synchronize and Event.elapsed_time, so the GPU timing reads small."""

import torch
from torch import nn

TRICK = "replaced torch.cuda.synchronize"


class Model(nn.Module):
    def forward(self, x):
        return torch.sin(x)


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.sin(x)


torch.cuda.synchronize = lambda device=None: None
if hasattr(torch.cuda, "Event"):
    torch.cuda.Event.elapsed_time = lambda self, end: 1e-3
