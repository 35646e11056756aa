"""Returns at once and computes its output on a thread started by the call."""

import threading
import time

import torch
from torch import nn

TRICK = "side thread"


class Model(nn.Module):
    def forward(self, x):
        return torch.exp(x) + 1.0


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []


# --- candidate ---
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)

        def work():
            time.sleep(0.05)  # the kernel, still running when the call returns
            torch.add(torch.exp(x), 1.0, out=out)

        threading.Thread(target=work, daemon=True).start()
        return out
