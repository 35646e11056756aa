"""Import hygiene, checked in fresh interpreters: the engine never pulls in the UI or torch,
and `gpuopt --help` starts without torch, textual or pydantic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
HEAVY = ("torch", "textual", "pydantic")


def _python(code: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=ENV, cwd=ROOT,
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_engine_packages_import_neither_textual_nor_torch() -> None:
    found = _python(
        """
import importlib, json, pkgutil, sys
# Scripts run by path in a subprocess (never imported by the engine): torch is their job.
RUN_BY_PATH = {"measure.torch_worker"}
names, culprits = [], {}
def heavy():
    return sorted({m.split(".")[0] for m in sys.modules} & {"textual", "torch"})
for top in ("session", "measure", "ledger"):
    package = importlib.import_module(top)
    names.append(top)
    for info in pkgutil.walk_packages(package.__path__, top + "."):
        if any(info.name == r or info.name.startswith(r + ".") for r in RUN_BY_PATH):
            continue
        before = heavy()
        importlib.import_module(info.name)
        names.append(info.name)
        if heavy() != before:
            culprits[info.name] = heavy()
print(json.dumps({"names": names, "loaded": heavy(), "culprits": culprits}))
"""
    )
    assert found["loaded"] == [], f"imported at module level by {found['culprits']}"
    # the walk really covered the packages (this modules at least)
    for name in ("session.models", "ledger.db", "ledger.schema", "ledger.store", "measure"):
        assert name in found["names"]


def test_help_imports_no_heavy_module() -> None:
    found = _python(
        f"""
import contextlib, io, json, sys
from tui.cli import build_parser, main
commands = []
for action in build_parser()._subparsers._group_actions:
    commands += list(action.choices)
for argv in [["--help"]] + [[c, "--help"] for c in commands]:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit as exc:
            assert exc.code == 0, (argv, exc.code)
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({list(HEAVY)!r}))
print(json.dumps({{"commands": commands, "loaded": loaded}}))
"""
    )
    assert found["loaded"] == []
    assert {"sessions", "new", "export", "ledger"} <= set(found["commands"])


def test_the_ledger_opens_without_numpy_or_the_telemetry_sampler(tmp_path: Path) -> None:
    # Every command line opens a ledger, which needs only the samples' columns: the
    # sampler, NVML and psutil are for the commands that measure (0.02 s of each start).
    # Both still import afterwards.
    found = _python(
        f"""
import json, sys
from ledger import Ledger
from session import models as m
with Ledger.open({str(tmp_path / "l.db")!r}) as ledger:
    contract = m.Contract(workloads=[m.Workload.parse("w=true")])
    ledger.put(m.Session(title="t", repo="/r", contract=contract))
    n = len(ledger.list(m.Session))
sampler = {{"psutil", "measure.telemetry.monitor", "measure.telemetry.nvml"}}
loaded = sorted(({{"numpy", "pandas"}} | sampler) & set(sys.modules))
import numpy
from measure.telemetry import make_monitor
print(json.dumps({{"loaded": loaded, "sessions": n, "numpy": numpy.__name__,
                   "monitor": make_monitor.__name__}}))
"""
    )
    assert found == {"loaded": [], "sessions": 1, "numpy": "numpy", "monitor": "make_monitor"}


def test_reading_an_up_to_date_ledger_does_not_import_sqlite_utils(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    _python(
        f"""
import json
from ledger import Ledger
from session import models as m
with Ledger.open({str(db)!r}) as ledger:
    contract = m.Contract(workloads=[m.Workload.parse("w=true")])
    ledger.put(m.Session(title="t", repo="/r", contract=contract))
print(json.dumps({{}}))
"""
    )
    found = _python(
        f"""
import json, sys
from ledger import Ledger
from session import models as m
with Ledger.open({str(db)!r}) as ledger:
    titles = [s.title for s in ledger.list(m.Session)]
    loaded = "sqlite_utils" in sys.modules
print(json.dumps({{"titles": titles, "loaded": loaded}}))
"""
    )
    assert found == {"titles": ["t"], "loaded": False}


def test_the_migration_names_are_the_ones_applied(tmp_path: Path) -> None:
    from ledger import Ledger
    from ledger.schema import KNOWN_MIGRATIONS, MIGRATION_SET

    with Ledger.open(tmp_path / "l.db") as ledger:
        rows = ledger.db.conn.execute(
            "SELECT name FROM _sqlite_migrations WHERE migration_set = ?", [MIGRATION_SET]
        ).fetchall()
        triggers = ledger.db.conn.execute("PRAGMA recursive_triggers").fetchone()[0]
    expected = {"m001_initial", "m002_row_versions", "m003_bisections", "m004_baseline_outcome"}
    assert {r[0] for r in rows} == KNOWN_MIGRATIONS == expected
    assert triggers == 1
