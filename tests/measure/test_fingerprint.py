"""The environment fingerprint: static facts, allowlisted variables only, no torch import."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from measure import fingerprint as fp


def test_only_allowlisted_variables_are_kept():
    env = {
        "CUDA_VISIBLE_DEVICES": "0",
        "OMP_NUM_THREADS": "4",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "HOME": "/home/me",
        "PATH": "/usr/bin",
    }
    assert fp.allowed_variables(env) == {"CUDA_VISIBLE_DEVICES": "0", "OMP_NUM_THREADS": "4"}
    data = fp.collect(environ=env)
    assert "wJalrXUtnFEMI" not in json.dumps(data)
    assert data["variables"] == {"CUDA_VISIBLE_DEVICES": "0", "OMP_NUM_THREADS": "4"}


def test_fields_describe_this_machine_and_fit_the_model():
    from session.models import EnvironmentFingerprint

    data = fp.collect()
    model = EnvironmentFingerprint(**data)
    assert model.cpu_count >= 1 and model.python.count(".") == 2 and model.hostname
    assert model.torch  # torch is installed in the test environment
    assert model.gpus or model.gpu_note  # either GPUs, or one line saying why not
    assert "\n" not in model.gpu_note
    assert fp.collect() == data  # static facts only: the same machine gives the same data


def test_collect_does_not_import_torch():
    code = (
        "import sys; from measure import fingerprint as f; f.collect(); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_nvml_failure_is_one_line(monkeypatch):
    pynvml = pytest.importorskip("pynvml")

    def boom() -> None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)

    monkeypatch.setattr(pynvml, "nvmlInit", boom)
    gpus, note, cuda = fp.gpu_info()
    assert gpus == [] and cuda is None
    assert note.startswith("NVML unavailable") and "Driver Not Loaded" in note and "\n" not in note


def test_another_interpreter_is_asked_without_importing_torch(tmp_path):
    fake = tmp_path / "python"
    fake.write_text(
        '#!/bin/sh\necho \'{"torch": "9.9", "torch_cuda": "12.8", "python": "3.99.0"}\'\n'
    )
    fake.chmod(0o755)
    assert fp.torch_versions(str(fake)) == {
        "torch": "9.9",
        "torch_cuda": "12.8",
        "python": "3.99.0",
    }
    assert fp.collect(python=str(fake))["python"] == "3.99.0"
