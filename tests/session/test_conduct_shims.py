"""A workload started through a version manager's shim is named, with the real interpreter."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from session import models as m
from session.conduct.executor import shim_warnings
from session.timing import shim_warning


def _fake_pyenv(tmp_path: Path) -> str:
    """A pyenv-like layout: a shim script, and a `pyenv` that says what it runs."""
    shims = tmp_path / "home" / ".pyenv" / "shims"
    shims.mkdir(parents=True)
    shim = shims / "python3"
    shim.write_text('#!/bin/sh\nexec pyenv exec python3 "$@"\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pyenv = bin_dir / "pyenv"
    pyenv.write_text(f"#!/bin/sh\necho {sys.executable}\n")
    for f in (shim, pyenv):
        f.chmod(0o755)
    return f"{shims}{os.pathsep}{bin_dir}{os.pathsep}/usr/bin:/bin"


def test_a_shim_is_named_with_the_interpreter_it_runs(tmp_path, monkeypatch):
    path = _fake_pyenv(tmp_path)
    monkeypatch.setenv("PATH", path)
    got = shim_warning("bench", "OMP_NUM_THREADS=1 python3 bench.py", path)
    assert got is not None
    assert "bench: python3 is a pyenv shim" in got and "tens of milliseconds" in got
    assert f"use {sys.executable} instead" in got
    assert shim_warning("bench", f"{sys.executable} bench.py", path) is None
    assert shim_warning("bench", "true", path) is None
    assert shim_warning("bench", "echo 'unclosed", path) is None


def test_the_executor_notes_carry_the_warning(tmp_path, monkeypatch):
    path = _fake_pyenv(tmp_path)
    session = m.Session(
        title="t",
        repo=str(tmp_path),
        contract=m.Contract(
            workloads=[
                m.Workload(name="shimmed", command="python3 -c pass", env={"PATH": path}),
                m.Workload(name="direct", command=f"{sys.executable} -c pass"),
            ]
        ),
    )
    (warning,) = shim_warnings(session)
    assert warning.startswith("shimmed: python3 is a pyenv shim")
