"""Dispatch by command name: `gpuopt --help` lists every command from the static table and
loads no command module; `gpuopt compare -N` loads compare's module alone, without the
ledger, pydantic, textual or torch (checked in real interpreters with -X importtime)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

from tui.cli import COMMANDS, _help_parser, build_parser, parser_for

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
HEAVY = ("textual", "pydantic", "torch", "sqlite3", "sqlite_utils", "ledger", "psutil")


def _imported(*argv: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules a real `python -X importtime -m tui.cli ARGV` imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tui.cli", *argv],
        capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=300,
    )  # fmt: skip
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }
    return names, done


def test_each_line_of_the_table_is_the_help_its_module_gives() -> None:
    for name, module, text in COMMANDS:
        parser = argparse.ArgumentParser(prog="gpuopt")
        sub = parser.add_subparsers(dest="command")
        importlib.import_module(f"tui.commands.parsers.{module}").add_parser(sub)
        (choice,) = sub._choices_actions
        assert (choice.dest, choice.help) == (name, text), module
        assert list(sub.choices) == [name], f"{module}: an alias the table lacks"


def test_the_help_from_the_table_is_the_whole_command_lines() -> None:
    assert _help_parser().format_help() == build_parser().format_help()


def test_a_named_command_gets_its_own_parser_and_others_the_tables() -> None:
    only = parser_for(["--ledger", "x.db", "compare", "-N", "true", "true"])
    (action,) = only._subparsers._group_actions  # type: ignore[union-attr]
    assert list(action.choices) == ["compare"]
    for argv in ([], ["--help"], ["nosuch"], ["-h", "compare"]):
        (action,) = parser_for(argv)._subparsers._group_actions  # type: ignore[union-attr]
        assert list(action.choices) == [name for name, _, _ in COMMANDS], argv


def test_help_loads_no_command_module() -> None:
    names, done = _imported("--help")
    assert done.returncode == 0, done.stderr[-500:]
    assert "compare" in done.stdout and "ledger" in done.stdout
    assert "session.errors" in names  # the parse of -X importtime's lines saw imports
    assert sorted(n for n in names if n.startswith("tui.commands.")) == []
    assert sorted(n for n in names if n.split(".")[0] in HEAVY) == []


def test_compare_no_shell_imports_its_module_alone_and_nothing_heavy(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    names, done = _imported(
        "compare", "-N", "-w", "0", "-r", "2", "--max-runs", "2", "--export-json", str(out),
        "true", "true",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-500:]
    assert out.exists()
    assert "session.conduct.compare" in names and "measure.runner" in names
    commands = {n for n in names if n.startswith("tui.commands.")}
    assert commands <= {"tui.commands", "tui.commands.compare", "tui.commands.run_opts",
                        "tui.commands.parsers", "tui.commands.parsers.compare",
                        "tui.commands.parsers.numbers", "tui.commands.parsers.options",
                        }, commands  # fmt: skip
    assert sorted(n for n in names if n.split(".")[0] in HEAVY) == []
    assert "session.models" not in names


def test_a_commands_help_loads_its_parser_and_no_handler_module() -> None:
    # sys.modules, not -X importtime: importtime does not time importlib.import_module
    code = """
import contextlib, io, json, sys
from tui.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(["round", "--help"])
print(json.dumps({"code": code, "out": out.getvalue(), "names": sorted(sys.modules)}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV,
                          cwd=ROOT, timeout=300)  # fmt: skip
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["code"] == 0 and "--min-blocks" in found["out"]
    commands = {n for n in found["names"] if n.startswith("tui.commands.")}
    assert "tui.commands.parsers.round_cmd" in commands
    assert {n for n in commands if not n.startswith("tui.commands.parsers")} == set(), commands
    assert sorted(n for n in found["names"] if n.split(".")[0] in HEAVY) == []
