"""Returns a tensor subclass that computes only when something reads it (after the timer)."""

import torch
from torch import nn

TRICK = "tensor subclass"


class Model(nn.Module):
    def forward(self, x):
        return torch.sqrt(x.abs() + 1.0)


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []


# --- candidate ---
class Deferred(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        args = tuple(torch.sqrt(a.abs() + 1.0) if type(a) is cls else a for a in args)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


class ModelNew(nn.Module):
    def forward(self, x):
        return x.as_subclass(Deferred)
