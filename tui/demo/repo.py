"""Create the demo repository: a naive softmax and three one-change branches.

Everything is written from the package's own files, with fixed authors and dates, so two
demo repositories have the same commits. No textual, no torch.
"""

from __future__ import annotations

import os
import subprocess
from importlib import resources
from pathlib import Path

import platformdirs

BRANCHES: dict[str, tuple[str, str]] = {
    # branch: (softmax file, commit message)
    "fused": ("softmax_fused.py.txt", "softmax: one torch.softmax call instead of four passes"),
    "no-max": ("softmax_nomax.py.txt", "softmax: skip the max subtraction"),
    "same": ("softmax_same.py.txt", "softmax: contiguous() first (a no-op, as a control)"),
}
BASE_FILES = {
    "softmax.py": "softmax_naive.py.txt",
    "problem.py": "problem.py.txt",
    "bench.py": "bench.py.txt",
    "check.py": "check.py.txt",
    "README.md": "README.md.txt",
}


class DemoError(Exception):
    pass


def _text(name: str) -> str:
    return resources.files("tui.demo").joinpath("files", name).read_text(encoding="utf-8")


def _git(repo: Path, *args: str, date: str = "2026-01-01T12:00:00+00:00") -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "gpuopt demo",
        "GIT_AUTHOR_EMAIL": "demo@gpuopt.invalid",
        "GIT_COMMITTER_NAME": "gpuopt demo",
        "GIT_COMMITTER_EMAIL": "demo@gpuopt.invalid",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    try:
        done = subprocess.run(
            ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    except FileNotFoundError:
        raise DemoError("git is not installed: the demo needs it") from None
    except subprocess.CalledProcessError as exc:
        raise DemoError(f"git {' '.join(args)} failed: {exc.stderr.strip()[:200]}") from None
    return done.stdout.strip()


def create_repo(path: str | Path) -> Path:
    """Create the demo repository at PATH (which must be missing or empty); returns it."""
    repo = Path(path).expanduser().resolve()
    if repo.exists() and any(repo.iterdir()):
        if (repo / ".git").is_dir() and (repo / "problem.py").is_file():
            return repo  # already a demo repository: reuse it
        raise DemoError(f"{repo} exists and is not empty: choose another --dir")
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q")
    for target, source in BASE_FILES.items():
        (repo / target).write_text(_text(source), encoding="utf-8")
    (repo / ".gitignore").write_text("__pycache__/\n*.pt\n", encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "naive softmax: max, subtract, exp, sum, divide")
    for i, (branch, (source, message)) in enumerate(BRANCHES.items()):
        _git(repo, "checkout", "-q", "-b", branch, "main")
        (repo / "softmax.py").write_text(_text(source), encoding="utf-8")
        _git(repo, "commit", "-q", "-am", message, date=f"2026-01-01T12:0{i + 1}:00+00:00")
    _git(repo, "checkout", "-q", "main")
    return repo


def default_dir() -> Path:
    return Path(platformdirs.user_data_dir("gpuopt", appauthor=False)) / "demo-softmax"
