"""The app stands on the session layer, not on a copy of it: no module of `tui` imports
`ledger` or `measure`, none holds SQL, none swallows an error to fall back on a stand-in,
and the old second copies (the bridge's fallbacks, the app's own telemetry feed) are gone."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TUI = sorted((ROOT / "tui").rglob("*.py"))
SQL = re.compile(
    r"\bSELECT\b.+\bFROM\b|\bINSERT\s+INTO\b|\bDELETE\s+FROM\b|\bUPDATE\s+\w+\s+SET\b", re.S
)


def _trees() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"), str(p))) for p in TUI]


def _imported(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_app_reaches_ledger_and_machine_only_through_session() -> None:
    assert TUI, "no tui modules found"
    found = {
        str(p.relative_to(ROOT)): sorted(
            n for n in _imported(t) if n.split(".")[0] in ("ledger", "measure")
        )
        for p, t in _trees()
    }
    assert {k: v for k, v in found.items() if v} == {}


def test_no_sql_in_the_app() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{node.lineno}"
        for p, t in _trees()
        for node in ast.walk(t)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value)
    ]
    assert found == []


def test_no_error_is_swallowed_into_a_fallback() -> None:
    found = []
    for p, t in _trees():
        for node in ast.walk(t):
            if (
                isinstance(node, ast.ExceptHandler)
                and isinstance(node.type, ast.Name)
                and node.type.id in ("Exception", "ImportError", "ModuleNotFoundError")
                and all(isinstance(s, (ast.Pass, ast.Continue)) for s in node.body)
            ):
                found.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_the_second_copies_are_gone() -> None:
    for name in ("tui.bridge", "tui.feed", "tui.demo.sample", "tui.demo.scenes"):
        assert importlib.util.find_spec(name) is None, name
