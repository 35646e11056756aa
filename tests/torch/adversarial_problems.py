"""KernelBench-format problems (ours) whose candidates a weak check lets through, in a real
git repository: a baseline commit and a variant commit, each in a detached worktree.

- layernorm: the candidate drops the affine weight and bias (they start at 1 and 0);
- softmax: the candidate leaves out the max subtraction (fine on randn, not at ×100);
- flaky: the candidate corrupts one element in every fourth call;
- inputs: the candidate is wrong, and redefines get_inputs() so that it looks right;
- raiser: the candidate raises inside forward;
- control: identical code on both sides;
- bias (training): the candidate does not use its bias, whose gradient is then None.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from torch_scenarios import git, write

HEAD = "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n"

BASELINE: dict[str, str] = {
    "problems/layernorm.py": HEAD
    + """
class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)
    def forward(self, x):
        return self.ln(x)
def get_inputs():
    return [torch.randn(4, 6, 32)]
def get_init_inputs():
    return [32]
""",
    "problems/softmax.py": HEAD
    + """
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
def get_inputs():
    return [torch.randn(8, 64)]
def get_init_inputs():
    return []
""",
    "problems/flaky.py": HEAD
    + """
class Model(nn.Module):
    def forward(self, x):
        return x * 2.0 + 1.0
def get_inputs():
    return [torch.randn(16, 16)]
def get_init_inputs():
    return []
""",
    "problems/inputs.py": HEAD
    + """
class Model(nn.Module):
    def forward(self, x):
        return torch.sin(x)
def get_inputs():
    return [torch.randn(16, 16)]
def get_init_inputs():
    return []
""",
    "problems/raiser.py": HEAD
    + """
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(16, 16)]
def get_init_inputs():
    return []
""",
    "problems/control.py": HEAD
    + """
class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
    def forward(self, x):
        return torch.tanh(self.lin(x)) * 0.5
def get_inputs():
    return [torch.randn(8, 16)]
def get_init_inputs():
    return [16]
""",
    "problems/bias.py": HEAD
    + """
class Model(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.lin = nn.Linear(n_in, n_out)
    def forward(self, x):
        return self.lin(x)
def get_inputs():
    return [torch.randn(5, 8)]
def get_init_inputs():
    return [8, 4]
""",
}

VARIANT: dict[str, str] = {
    "problems/layernorm.py": BASELINE["problems/layernorm.py"]
    + """
class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)
    def forward(self, x):  # "fused": but weight and bias are gone
        return F.layer_norm(x, self.ln.normalized_shape, eps=self.ln.eps)
""",
    "problems/softmax.py": BASELINE["problems/softmax.py"]
    + """
class ModelNew(nn.Module):
    def forward(self, x):  # one pass fewer: no max subtraction
        e = torch.exp(x)
        return e / e.sum(dim=-1, keepdim=True)
""",
    "problems/flaky.py": BASELINE["problems/flaky.py"]
    + """
import sys
class ModelNew(nn.Module):
    def forward(self, x):  # a race: one element goes wrong in every fourth call
        n = getattr(sys, "_gpuopt_flaky_calls", 0) + 1
        sys._gpuopt_flaky_calls = n
        out = x * 2.0 + 1.0
        if n % 4 == 0:
            out.view(-1)[n % out.numel()] += 1.0
        return out
""",
    "problems/inputs.py": HEAD
    + """
class Model(nn.Module):
    def forward(self, x):
        return torch.sin(x)
class ModelNew(nn.Module):
    def forward(self, x):  # wrong everywhere but at zero
        return x
def get_inputs():
    return [torch.zeros(16, 16)]
def get_init_inputs():
    return []
""",
    "problems/raiser.py": BASELINE["problems/raiser.py"]
    + """
class ModelNew(nn.Module):
    def forward(self, x):
        raise RuntimeError("custom kernel failed: illegal instruction at tile 3")
""",
    "problems/bias.py": BASELINE["problems/bias.py"]
    + """
class ModelNew(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.lin = nn.Linear(n_in, n_out)
    def forward(self, x):  # the bias is never used
        return x @ self.lin.weight.t()
""",
}

WORKLOADS = [f"{Path(p).stem}=kernelbench:{p}" for p in BASELINE]


@dataclass
class ProblemRepo:
    repo: Path
    base_dir: Path
    variant_dir: Path
    variant_commit: str


@pytest.fixture(name="problem_repo", scope="session")
def problem_repo_fixture(tmp_path_factory: pytest.TempPathFactory) -> ProblemRepo:
    top = tmp_path_factory.mktemp("problems")
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
    return ProblemRepo(repo, base_dir, variant_dir, variant)
