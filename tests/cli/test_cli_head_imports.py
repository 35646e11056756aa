"""A command's parser (tui/commands/parsers/M.py) is light and its handlers (tui/commands/M.py)
import what they need at their head: `gpuopt --help` and `gpuopt CMD --help` load no handler
module (tui.cli imports it by name after parsing), so no handler needs an import in a
function to keep help fast (issue 19: CLI handlers import at module head, dispatch lazy by
command name)."""

from __future__ import annotations

import argparse
import ast
import importlib
from pathlib import Path

from tui.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
COMMANDS_DIR = ROOT / "tui" / "commands"

# The imports left inside a function under tui/commands, each with its reason; at most
# MAX_IN_FUNCTION of them. A handler module's own weight is no reason: help never loads it.
IN_FUNCTION = {
    ("compare.py", "tui.commands.common"): "compare without --ledger runs without the ledger",
    ("run_opts.py", "session.api"): "the ledger and telemetry (psutil): compare has neither",
    ("demo.py", "tui.app"): "textual only for the app: demo --no-tui runs without it",
    ("review.py", "tui.app"): "textual only for the app: review --serve runs without it",
    ("telemetry.py", "tui.telemetry_app"): "textual only for the live view, not --once",
}
MAX_IN_FUNCTION = 6
# What a parser module may import: argparse and its own kind, never pydantic or the engine.
PARSER_IMPORTS = {"__future__", "argparse", "collections.abc", "typing", "session.api",
                  "tui.commands.parsers.numbers", "tui.commands.parsers.options"}  # fmt: skip


def in_function_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) for each import anywhere inside a function's body."""
    found = []
    for f in ast.walk(ast.parse(source)):
        if not isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for s in ast.walk(f):
            if isinstance(s, ast.ImportFrom):
                found.append((s.lineno, "." * s.level + (s.module or "")))
            elif isinstance(s, ast.Import):
                found += [(s.lineno, a.name) for a in s.names]
    return sorted(set(found))


def test_the_scan_finds_an_import_in_a_handler_even_nested() -> None:
    planted = "import os\ndef run(a):\n    import sys\n    if a:\n        from session import api\n"
    assert in_function_imports(planted) == [(3, "sys"), (5, "session")]


def test_handlers_import_at_their_head_but_for_the_named_exceptions() -> None:
    assert len(IN_FUNCTION) <= MAX_IN_FUNCTION
    found = {
        (str(path.relative_to(COMMANDS_DIR)), module): line
        for path in sorted(COMMANDS_DIR.rglob("*.py"))
        for line, module in in_function_imports(path.read_text(encoding="utf-8"))
    }
    extra = sorted(f"tui/commands/{f}:{line}: {mod}" for (f, mod), line in found.items()
                   if (f, mod) not in IN_FUNCTION)  # fmt: skip
    assert not extra, "import these at the module's head:\n" + "\n".join(extra)
    assert set(IN_FUNCTION) <= set(found), "an exception no longer needed: drop it"


def test_parser_modules_import_argparse_and_each_other_only() -> None:
    for path in sorted((COMMANDS_DIR / "parsers").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.module in PARSER_IMPORTS, (path.name, node.module)
            elif isinstance(node, ast.Import):
                assert {a.name for a in node.names} <= PARSER_IMPORTS, path.name


def _handlers(parser: argparse.ArgumentParser) -> list[object]:
    found = [parser.get_default("handler")]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found += _handlers(child)
    return [h for h in found if h is not None]


def test_each_parser_names_its_handlers_by_string_and_each_resolves() -> None:
    from tui.cli import resolve

    for _name, module, _text in COMMANDS:
        parser = argparse.ArgumentParser()
        importlib.import_module(f"tui.commands.parsers.{module}").add_parser(
            parser.add_subparsers()
        )
        handlers = _handlers(parser)
        assert handlers, module
        for handler in handlers:
            assert isinstance(handler, str), (module, handler)
            assert handler.startswith(f"tui.commands.{module}:"), handler
            assert callable(resolve(handler)), handler
