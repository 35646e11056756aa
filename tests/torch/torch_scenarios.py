"""Fixture: a real git repository of small torch workloads, a baseline commit and a variant commit,
both checked out with `git worktree add --detach` into temporary directories."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

BASELINE: dict[str, str] = {
    "kern/__init__.py": "",
    # naive softmax; the variant calls torch.softmax (within tolerance, fewer operators)
    "kern/s_fast.py": """
import torch
def naive(x):
    m = x.max(dim=-1, keepdim=True).values
    e = (x - m).exp()
    return e / e.sum(dim=-1, keepdim=True)
def bench(device, dtype, seed):
    return {"fn": naive, "inputs": [torch.randn(4, 16, device=device, dtype=dtype)]}
""",
    # large logits: safe with the max subtracted; the variant drops it (overflow → NaN)
    "kern/s_nomax.py": """
import torch
def f(x):
    e = (x - x.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)
def bench(device, dtype, seed):
    return {"fn": f, "inputs": [torch.randn(4, 16, device=device, dtype=dtype) * 400]}
""",
    # keep the first `length` columns of each row; the variant keeps one too many
    "kern/s_mask.py": """
import torch
LENGTHS = [10, 30, 50]
def f(x, lengths):
    keep = torch.arange(x.shape[-1], device=x.device)[None, :] < lengths[:, None]
    return torch.where(keep, x, torch.zeros_like(x))
def bench(device, dtype, seed):
    x = torch.randn(3, 64, device=device, dtype=dtype).abs() + 1
    return {"fn": f, "inputs": [x, torch.tensor(LENGTHS, device=device)]}
""",
    # the variant moves the arithmetic into a helper: bit-identical
    "kern/s_refactor.py": """
import torch
def f(x, y):
    return torch.tanh(x * 2.0 + y) - y / 3.0
def bench(device, dtype, seed):
    return {"fn": f, "inputs": [torch.randn(6, 5, device=device, dtype=dtype),
                                torch.randn(6, 5, device=device, dtype=dtype)]}
""",
    # the variant computes (and returns) bfloat16
    "kern/s_bf16.py": """
import torch
def f(x, w):
    return torch.tanh(x @ w)
def bench(device, dtype, seed):
    return {"fn": f, "inputs": [torch.randn(4, 16, device=device, dtype=dtype),
                                torch.randn(16, 8, device=device, dtype=dtype) / 4]}
""",
    # a training path: the variant's hand-written backward is wrong, its forward is not
    "kern/s_train.py": """
import torch
def f(x, w):
    return torch.tanh(x @ w)
def bench(device, dtype, seed, training):
    w = torch.randn(8, 4, device=device, dtype=dtype, requires_grad=training)
    x = torch.randn(5, 8, device=device, dtype=dtype)
    return {"fn": f, "inputs": [x, w], "params": {"w": w}}
""",
    # the variant's import fails
    "kern/s_broken.py": """
import torch
def bench(device, dtype, seed):
    return {"fn": torch.neg, "inputs": [torch.randn(3, device=device, dtype=dtype)]}
""",
    "problems/p_model.py": """
import torch
from torch import nn
class Model(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.lin = nn.Linear(n_in, n_out)
    def forward(self, x):
        return torch.relu(self.lin(x))
def get_inputs():
    return [torch.randn(4, 16)]
def get_init_inputs():
    return [16, 8]
""",
}

VARIANT: dict[str, str] = {
    "kern/s_fast.py": """
import torch
def bench(device, dtype, seed):
    return {"fn": lambda x: torch.softmax(x, dim=-1),
            "inputs": [torch.randn(4, 16, device=device, dtype=dtype)]}
""",
    "kern/s_nomax.py": """
import torch
def f(x):
    e = x.exp()
    return e / e.sum(dim=-1, keepdim=True)
def bench(device, dtype, seed):
    return {"fn": f, "inputs": [torch.randn(4, 16, device=device, dtype=dtype) * 400]}
""",
    "kern/s_mask.py": """
import torch
LENGTHS = [10, 30, 50]
def f(x, lengths):
    keep = torch.arange(x.shape[-1], device=x.device)[None, :] <= lengths[:, None]
    return torch.where(keep, x, torch.zeros_like(x))
def bench(device, dtype, seed):
    x = torch.randn(3, 64, device=device, dtype=dtype).abs() + 1
    return {"fn": f, "inputs": [x, torch.tensor(LENGTHS, device=device)]}
""",
    "kern/s_refactor.py": """
import torch
def _scaled(x, y):
    return x * 2.0 + y
def f(x, y):
    third = y / 3.0
    return torch.tanh(_scaled(x, y)) - third
def bench(device, dtype, seed):
    return {"fn": f, "inputs": [torch.randn(6, 5, device=device, dtype=dtype),
                                torch.randn(6, 5, device=device, dtype=dtype)]}
""",
    "kern/s_bf16.py": """
import torch
def f(x, w):
    return torch.tanh(x.bfloat16() @ w.bfloat16())
def bench(device, dtype, seed):
    return {"fn": f, "inputs": [torch.randn(4, 16, device=device, dtype=dtype),
                                torch.randn(16, 8, device=device, dtype=dtype) / 4]}
""",
    "kern/s_train.py": """
import torch
class Tanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        y = torch.tanh(z)
        ctx.save_for_backward(y)
        return y
    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1 - y)  # wrong: the derivative is 1 - y*y
def f(x, w):
    return Tanh.apply(x @ w)
def bench(device, dtype, seed, training):
    w = torch.randn(8, 4, device=device, dtype=dtype, requires_grad=training)
    x = torch.randn(5, 8, device=device, dtype=dtype)
    return {"fn": f, "inputs": [x, w], "params": {"w": w}}
""",
    "kern/s_broken.py": """
import torch
raise RuntimeError("half-finished edit")
""",
    "problems/p_model.py": BASELINE["problems/p_model.py"]
    + """
class ModelNew(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.lin = nn.Linear(n_in, n_out)
    def forward(self, x):
        return torch.addmm(self.lin.bias, x, self.lin.weight.t()).clamp_min(0)
""",
}

WORKLOADS = [
    "s_fast=torch:kern.s_fast:bench",
    "s_nomax=torch:kern.s_nomax:bench",
    "s_mask=torch:kern.s_mask:bench",
    "s_refactor=torch:kern.s_refactor:bench",
    "s_bf16=torch:kern.s_bf16:bench",
    "s_train=torch:kern.s_train:bench",
    "s_broken=torch:kern.s_broken:bench",
    "kb=kernelbench:problems/p_model.py",
]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip("\n"))


@dataclass
class TorchRepo:
    repo: Path
    base_commit: str
    variant_commit: str
    base_dir: Path
    variant_dir: Path
    workloads: list[str]


@pytest.fixture(name="torch_repo", scope="session")
def torch_repo_fixture(tmp_path_factory: pytest.TempPathFactory) -> TorchRepo:
    top = tmp_path_factory.mktemp("torchrepo")
    repo = top / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, BASELINE)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "baseline")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "variant")
    write(repo, VARIANT)
    git(repo, "commit", "-q", "-am", "variant")
    variant = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    base_dir, variant_dir = top / "wt-base", top / "wt-variant"
    git(repo, "worktree", "add", "-q", "--detach", str(base_dir), base)
    git(repo, "worktree", "add", "-q", "--detach", str(variant_dir), variant)
    return TorchRepo(repo, base, variant, base_dir, variant_dir, list(WORKLOADS))
