"""The worker is a package of short modules that runs where gpuopt is not installed: by path
(how gpuopt ships it), through runpy (the preload server's way) and with `python -m`."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from measure import harness

PACKAGE = harness.WORKER.parent
OURS = ("measure", "session", "ledger", "tui")
# Refuses every import of gpuopt's packages (the shared venv has gpuopt installed).
BLOCK = (
    "import sys\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    f"        if name.split('.')[0] in {OURS!r}:\n"
    "            raise ImportError('gpuopt is not on this box: ' + name)\n"
    "sys.meta_path.insert(0, Block())\n"
)
PROBLEM = (
    "import torch\n"
    "from torch import nn\n"
    "class Model(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return torch.relu(x) * 2\n"
    "def get_inputs():\n"
    "    return [torch.randn(256)]\n"
    "def get_init_inputs():\n"
    "    return []\n"
)
# A workload module named like one of the worker's own modules: it must not be shadowed.
FACTORY = (
    "import torch\n"
    "def bench(device, seed):\n"
    "    g = torch.Generator().manual_seed(seed)\n"
    "    return {'fn': lambda x: x.exp(), 'inputs': [torch.randn(128, generator=g)]}\n"
)


def test_no_module_of_the_worker_is_over_600_lines() -> None:
    sizes = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")}
    assert len(sizes) >= 8, sizes
    assert max(sizes.values()) <= 600, sizes


def test_the_worker_imports_only_the_standard_library_torch_and_itself() -> None:
    allowed = set(sys.stdlib_module_names) | {"torch", "numpy"}
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                continue  # its own modules
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                tops = [str(node.module).split(".")[0]]
            else:
                continue
            assert set(tops) <= allowed, f"{path.name} imports {tops}"


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GPU box's folder: a copy of the package, a problem file and a workload module."""
    root = tmp_path_factory.mktemp("box")
    shutil.copytree(PACKAGE, root / "torch_worker", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "problem.py").write_text(PROBLEM)
    (root / "timing.py").write_text(FACTORY)
    return root


def _run(box: Path, argv: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(OMP_NUM_THREADS="1", GPUOPT_TORCH_MIN_TIME="0.01")
    done = subprocess.run(
        [sys.executable, "-B", *argv], cwd=box, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _blocked(script: str) -> list[str]:
    return ["-c", BLOCK + script]


@pytest.mark.parametrize(
    "how",
    [
        "path",  # python box/torch_worker/__main__.py, as harness.WORKER is launched
        "runpy",  # runpy.run_path, as the preload server runs it
        "module",  # python -m torch_worker
    ],
)
@pytest.mark.slow
def test_the_worker_runs_from_a_copy_without_gpuopt(box: Path, how: str) -> None:
    args = ["time", "--kind", "kernelbench", "--spec", "problem.py"]
    main = str(box / "torch_worker" / "__main__.py")
    here = str(box / "torch_worker")
    head = "import runpy, sys\n"
    script = {
        "path": f"sys.argv = {[main, *args]!r}\nsys.path[0] = {here!r}\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n",
        "runpy": f"sys.argv = {[main, *args]!r}\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n",
        "module": f"sys.argv = ['torch_worker', *{args!r}]\nsys.path.insert(0, '')\n"
        "runpy.run_module('torch_worker', run_name='__main__', alter_sys=True)\n",
    }[how]
    line = _run(box, _blocked(head + script))
    assert line["gpuopt_worker"] == "time" and "error" not in line, line
    assert line["gpuopt_value"] > 0 and line["device"] == "cpu"


@pytest.mark.slow
def test_a_copy_run_by_path_times_a_workload_named_like_a_worker_module(box: Path) -> None:
    """The package's folder is off sys.path: the checkout's `timing` module is the one used."""
    line = _run(box, [str(box / "torch_worker" / "__main__.py"), "time", "--spec", "timing:bench"])
    assert "error" not in line, line
    assert line["gpuopt_value"] > 0
    plain = _run(box, ["-m", "torch_worker", "time", "--spec", "timing:bench"])
    assert "error" not in plain and plain["gpuopt_value"] > 0, plain
