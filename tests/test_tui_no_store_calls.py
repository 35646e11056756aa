"""No front end calls the store: every read and write of tui/ goes through the session
layer (session.api, the read model), so a rule kept by one door is kept by all (issue 19).

The scan is by the AST, not by words: a method called on anything named like the ledger
or a store (`ledger.list(...)`, `self.app.ledger.get(...)`, `bisection_store.list_all(...)`),
and any call of a method only the ledger has, whatever holds it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# the receiver's own name: `ledger`, `self._sink_ledger`, `store`, `bisection_store`, `db`
STORE_NAME = re.compile(r"(^|_)(ledger|store|db)$|^l$|^lg$", re.IGNORECASE)
# opening and closing the file a session lives in is the front end's to do; the rest is
# reading or writing rows, which is the session layer's
LIFECYCLE = {"open", "close"}
# methods no other object of ours has: a call of one is a store call, whatever holds it
LEDGER_ONLY = {
    "put_if_unchanged",
    "get_versioned",
    "resolve_session",
    "session_rows",
    "latest_baseline",
    "insert_samples",
    "search_hypotheses",
    "validate_rows",
}


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def store_calls(source: str) -> list[tuple[int, str]]:
    """(line, call) for each store call in one module's source."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute):
            holder = _name(func.value)
            on_store = holder is not None and STORE_NAME.search(holder) is not None
            if (on_store and func.attr not in LIFECYCLE) or func.attr in LEDGER_ONLY:
                found.append((node.lineno, f"{holder}.{func.attr}(...)"))
        elif isinstance(func, ast.Name) and func.id == "getattr" and node.args:
            holder = _name(node.args[0])  # getattr(ledger, "unreadable", ...) reads it too
            if holder is not None and STORE_NAME.search(holder):
                found.append((node.lineno, f"getattr({holder}, ...)"))
    return found


def test_the_scan_catches_each_kind_of_store_call() -> None:
    planted = (
        "def f(ledger, app, rows, bisection_store, s):\n"
        "    ledger.list(m.Variant)\n"
        "    app.ledger.put(x)\n"
        "    bisection_store.list_all(ledger)\n"
        "    s.resolve_session('x')\n"
        "    getattr(ledger, 'unreadable', [])\n"
        "    Ledger.open(p).close()\n"  # lifecycle: not a store call
        "    stored.get('k')\n"  # a dict named `stored`: not the store
        "    rows.list()\n"
    )
    assert [line for line, _ in store_calls(planted)] == [2, 3, 4, 5, 6]


def test_tui_makes_no_store_call() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {call}"
        for path in sorted((ROOT / "tui").rglob("*.py"))
        for line, call in store_calls(path.read_text(encoding="utf-8"))
    ]
    assert not found, "store calls in tui/ (go through session.api):\n" + "\n".join(found)
