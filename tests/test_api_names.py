"""session.api names each thing a front end uses once, imported from its owner when first
asked for: its `TYPE_CHECKING` imports (what mypy sees) and `_OWNERS` (what runs) agree,
each name is its owner's own object, and importing session.api imports no session module."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import session.api as api

ROOT = Path(__file__).resolve().parents[1]


def _type_checking_imports() -> dict[str, tuple[str, str]]:
    tree = ast.parse((ROOT / "session" / "api" / "__init__.py").read_text(encoding="utf-8"))
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    )
    return {
        a.asname or a.name: (node.module, a.name)
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for a in node.names
    }


def test_what_mypy_sees_is_what_runs() -> None:
    assert _type_checking_imports() == api._WHERE
    assert sorted(api.__all__) == sorted(api._WHERE)


def test_each_name_is_its_owners_object() -> None:
    for name, (module, owned_as) in api._WHERE.items():
        assert getattr(api, name) is getattr(importlib.import_module(module), owned_as), name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        api.no_such_name  # noqa: B018


def test_importing_the_api_imports_no_session_module() -> None:
    code = (
        "import json, sys\nimport session.api\nfrom session.api import out_of_range\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'session')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True, timeout=120).stdout  # fmt: skip
    assert json.loads(out) == ["session", "session.api", "session.limits"]
