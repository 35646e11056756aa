"""measure.git_refs, the one user of GitPython: it reads the repository it is given even
when the caller's environment points git elsewhere, and takes no optional lock."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from measure.git_refs import SAME_TREE, list_refs


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def _repo(path: Path, branch: str) -> Path:
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("one\n")
    _git(path, "add", "a.txt")
    _git(path, "commit", "-qm", "first")
    _git(path, "checkout", "-qb", branch)
    (path / "a.txt").write_text("one\ntwo\n")
    _git(path, "commit", "-qam", f"{branch}: second")
    _git(path, "checkout", "-q", "main")
    return path


def test_a_foreign_git_dir_does_not_redirect_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path / "mine", "fused")
    other = _repo(tmp_path / "other", "elsewhere")
    for name, value in {
        "GIT_DIR": other / ".git",
        "GIT_WORK_TREE": other,
        "GIT_INDEX_FILE": other / ".git" / "index",
        "GIT_OBJECT_DIRECTORY": other / ".git" / "objects",
    }.items():
        monkeypatch.setenv(name, str(value))
    main = _git(repo, "rev-parse", "main")
    refs = {r.name: r for r in list_refs(repo, main)}
    assert set(refs) == {"main", "fused"}
    assert refs["fused"].subject == "fused: second"
    assert refs["fused"].stat == "1 file, +1 −0"
    assert refs["main"].stat == SAME_TREE


def test_it_leaves_the_index_as_it_was(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "mine", "fused")
    (repo / "a.txt").write_text("edited, not staged\n")  # a stat refresh would rewrite the index
    index = repo / ".git" / "index"
    before = index.read_bytes(), index.stat().st_mtime_ns
    list_refs(repo, _git(repo, "rev-parse", "main"))
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before
    assert not (repo / ".git" / "index.lock").exists()
