"""SQL lives in ledger/ only (issue 19): the session layer asks the ledger by name
(`ledger.queries`, the store's methods), so a table's shape is known in one package.

The scan is by the AST: a string that reads as SQL (a literal, or any part of an f-string),
and a `.query(...)` or `.execute(...)` call, anywhere under session/. The one exception is
a port adapter's own `query(self, sql, params)` that hands its arguments on unchanged
(session.cluster.journaling wraps the node's ledger): it holds no SQL of its own.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SQL = re.compile(
    r"\b(SELECT\b.*\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+"
    r"(TABLE|INDEX|TRIGGER)|DROP\s+TABLE|PRAGMA\s+\w+|json_extract\()",
    re.DOTALL,
)
RAW_CALLS = {"query", "execute", "executemany", "executescript", "fetch_named"}


def _forwards_own_args(func: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call) -> bool:
    """`def query(self, sql, params): return self.inner.query(sql, params)`."""
    own = [a.arg for a in func.args.args[1:]]
    passed = [a.id for a in call.args if isinstance(a, ast.Name)]
    return (
        func.name == call.func.attr  # type: ignore[attr-defined]
        and len(passed) == len(call.args)
        and passed == own
        and not call.keywords
    )


def sql_in(source: str) -> list[tuple[int, str]]:
    """(line, what) for each SQL string and raw query call in one module's source."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    exempt: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and _forwards_own_args(fn, node)
                ):
                    exempt.add(id(node))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if SQL.search(node.value):
                found.append((node.lineno, f"SQL text {node.value[:50]!r}"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in RAW_CALLS
            and id(node) not in exempt
        ):
            found.append((node.lineno, f".{node.func.attr}(...)"))
    return found


def test_the_scan_finds_sql_and_raw_queries() -> None:
    src = (
        "def f(ledger, sid):\n"
        "    rows = ledger.query('SELECT n FROM checklist WHERE session_id = ?', (sid,))\n"
        "    with ledger.write() as db:\n"
        "        db.execute(f'DELETE FROM {t} WHERE id = ?', [sid])\n"
        "    return rows\n"
        "class Port:\n"
        "    def query(self, sql, params=()):\n"
        "        return self.inner.query(sql, params)\n"
    )
    lines = sorted({line for line, _ in sql_in(src)})
    assert lines == [2, 4]  # the SQL and the calls; the forwarding port is no SQL


def test_no_sql_under_session() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in sorted((ROOT / "session").rglob("*.py"))
        for line, what in sql_in(path.read_text(encoding="utf-8"))
    ]
    assert not found, "SQL belongs in ledger/ (ledger.queries):\n" + "\n".join(found)
