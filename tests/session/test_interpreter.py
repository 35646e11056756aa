"""Asking a real interpreter for torch: this venv's has it, a fresh venv's has not, and the
answer says what to install (the demo's first line when torch is missing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from measure.interpreter import missing_modules
from session.interpreter import torch_missing


def test_this_interpreter_has_torch_and_no_made_up_module() -> None:
    assert torch_missing(sys.executable) is None
    assert missing_modules(sys.executable, ["json", "no_such_module_here"]) == [
        "no_such_module_here"
    ]


def test_a_fresh_venv_without_torch_is_told_what_to_install(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "v")], check=True)
    bare = str(tmp_path / "v" / "bin" / "python")
    said = torch_missing(bare)
    assert said is not None
    assert bare in said and "no torch" in said
    assert "gpuopt[torch]" in said and "download.pytorch.org/whl/cpu" in said


def test_an_interpreter_that_does_not_start_is_said(tmp_path: Path) -> None:
    said = torch_missing(str(tmp_path / "no-python-here"))
    assert said is not None and "cannot ask" in said
    with pytest.raises(OSError):
        missing_modules(str(tmp_path / "no-python-here"), ["torch"])


def test_asking_does_not_import_torch_in_the_asking_process() -> None:
    code = (
        "import sys; from session.interpreter import torch_missing; torch_missing();"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
