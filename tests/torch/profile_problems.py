"""KernelBench-format problems for the profile tests, written into a folder by `write_all`."""

from __future__ import annotations

from pathlib import Path

PROBLEMS = {
    # The demo's softmax written out step by step, and the same as one library call.
    "naive.py": """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        shift = x.max(dim=-1, keepdim=True).values
        e = (x - shift).exp()
        total = e.sum(dim=-1, keepdim=True)
        return e / total


def get_inputs():
    return [torch.randn(128, 1024) * 4.0]


def get_init_inputs():
    return []
""",
    "fused.py": """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(128, 1024) * 4.0]


def get_init_inputs():
    return []
""",
    # A matmul followed by three elementwise ops: three full-buffer write/read pairs.
    "mm3.py": """
import torch
from torch import nn

N = 256


class Model(nn.Module):
    def forward(self, a, b):
        y = a @ b
        y = y * 2.0
        y = y + 1.0
        return torch.relu(y)


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
""",
    "matmul.py": """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b)


def get_inputs():
    return [torch.randn(512, 512), torch.randn(512, 512)]


def get_init_inputs():
    return []
""",
    "add.py": """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


def get_inputs():
    return [torch.randn(1 << 22), torch.randn(1 << 22)]


def get_init_inputs():
    return []
""",
    # An in-place op writes an intermediate again, and a view reads it without computing.
    "inplace.py": """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, a, b):
        y = a @ b
        y = y * 2.0
        y.relu_()
        return y.view(-1).sum()


def get_inputs():
    return [torch.randn(128, 128), torch.randn(128, 128)]


def get_init_inputs():
    return []
""",
    # torch.compile with a graph break (a print), on the eager backend: no code generation.
    "compiled.py": """
import torch
from torch import nn


def body(x):
    y = x.sin()
    print("a graph break")
    return y.cos()


compiled = torch.compile(body, backend="eager")


class Model(nn.Module):
    def forward(self, x):
        return compiled(x)


def get_inputs():
    return [torch.randn(64)]


def get_init_inputs():
    return []
""",
}


def write_all(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in PROBLEMS.items():
        (folder / name).write_text(text.lstrip())
    return folder
