"""The app reaches the session layer through its one door (issue 19): tui/ imports of
session only `session.api` (and its submodules), `session.models`, `session.verdicts` and
the read model `session.read_model`, and never a session module added later. The
import-linter contract `tui-through-the-api` (pyproject.toml) holds the same rule on the
import graph; this walk names each file and line, and runs without lint-imports."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = ("session.api", "session.models", "session.verdicts", "session.read_model")


def allowed(module: str) -> bool:
    return module in ALLOWED or module.startswith("session.api.")


def session_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) for each session module an import statement names, anywhere in the
    file: `from session import x` names `session.x` (a module or a name of session)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "session"
            ]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "session":
                found += [(node.lineno, f"session.{a.name}") for a in node.names]
            elif node.module.split(".")[0] == "session":
                found.append((node.lineno, node.module))
    return sorted(found)


def test_the_walk_sees_each_form_of_import() -> None:
    planted = (
        "import session.conduct\nfrom session import models as m, conduct\n"
        "def f():\n    from session.errors import GpuoptError\n"
        "from session.api import Session\nimport sessionx\n"
    )
    assert session_imports(planted) == [
        (1, "session.conduct"), (2, "session.conduct"), (2, "session.models"),
        (4, "session.errors"), (5, "session.api"),
    ]  # fmt: skip
    assert [allowed(mod) for _, mod in session_imports(planted)] == [
        False, False, True, False, True,
    ]  # fmt: skip


def test_tui_imports_of_session_only_the_api_the_models_verdicts_and_read_model() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sorted((ROOT / "tui").rglob("*.py"))
        for line, module in session_imports(path.read_text(encoding="utf-8"))
        if not allowed(module)
    ]
    assert not bad, f"{len(bad)} imports past session.api:\n" + "\n".join(bad)
