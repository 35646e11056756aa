"""`gpuopt profile` on a shell workload with no Nsight tool on PATH profiles nothing: it
fails (exit 1) and says what is missing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from method_factory import make_baseline, open_ledger

from session import models as m
from tui.cli import main


def test_a_shell_workload_with_no_nsight_tool_exits_1_with_the_hint(
    make_repo: Any, tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    path = [d for d in os.environ["PATH"].split(os.pathsep) if d]
    path = [d for d in path if not any(Path(d, t).exists() for t in ("nsys", "ncu"))]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    assert shutil.which("nsys") is None and shutil.which("ncu") is None
    repo = make_repo(files={"bench.sh": "echo ran\n"})
    with open_ledger(tmp_path) as ledger:
        s = m.Session(
            title="shell",
            repo=str(repo),
            contract=m.Contract(workloads=[m.Workload(name="sh", command="sh bench.sh")]),
        )
        ledger.put(s)
        make_baseline(ledger, s)
    capsys.readouterr()
    code = main(["--ledger", str(tmp_path / "ledger.db"), "profile", s.id, "--workload", "sh"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""  # stdout holds only what was profiled
    assert "neither Nsight Systems (nsys) nor Nsight Compute (ncu) is on PATH" in err
    assert err.startswith("gpuopt: sh: shell workload(s)")
