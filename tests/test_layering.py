"""The layering declared in pyproject.toml holds, and each contract really catches the
import it forbids: planted into a copy of the packages, lint-imports reports it broken."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tui", "session", "measure", "ledger")


def _lint_imports(cwd: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("lint-imports")
    assert exe.exists(), "import-linter is a test dependency: pip install -e '.[test]'"
    selected = [arg for contract in contracts for arg in ("--contract", contract)]
    return subprocess.run(
        [str(exe), "--no-logo", "--no-cache", *selected],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd)},
    )  # fmt: skip


def test_the_declared_layering_holds() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
    # every contract the issue asks for is declared (a missing one is not "kept")
    for contract in (
        "a layer never imports the one above it",
        "the app reaches the ledger and the machine only through the session layer",
        "tui imports of the session layer only session.api, models, verdicts, read_model",
        "measure imports nothing of ours",
        "of the session layer only session.models",
        "session.models is a leaf",
        "the core never imports textual or rich",
    ):
        assert contract in result.stdout


@pytest.fixture(scope="module")
def copy_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("layering")
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        ("session/evidence.py", "import tui.app", "layers"),
        ("tui/display.py", "import ledger.store", "tui-through-session"),
        ("tui/display.py", "from measure import git", "tui-through-session"),
        ("tui/display.py", "from session.ledger_access import Ledger", "tui-through-the-api"),
        ("tui/display.py", "import session.telemetry_access", "tui-through-the-api"),
        ("tui/display.py", "from session.bisect import store", "tui-through-the-api"),
        ("tui/display.py", "from session import conduct", "tui-through-the-api"),
        ("tui/display.py", "from session.errors import BadInput", "tui-through-the-api"),
        ("measure/redact.py", "import session.models", "measure-imports-nothing-of-ours"),
        ("measure/redact.py", "import ledger", "measure-imports-nothing-of-ours"),
        ("ledger/store.py", "import session.steps", "ledger-through-session-models-only"),
        ("ledger/store.py", "import tui.display", "ledger-through-session-models-only"),
        ("session/models/__init__.py", "import session.steps", "session-models-is-a-leaf"),
        ("session/models/enums.py", "import session.gates", "session-models-is-a-leaf"),
        ("measure/redact.py", "import textual", "headless-core"),
        ("ledger/db.py", "from rich.live import Live", "headless-core"),
    ],
)
def test_a_planted_import_breaks_its_contract(
    copy_root: Path, module: str, planted: str, contract: str
) -> None:
    target = copy_root / module
    original = target.read_text()
    target.write_text(original + f"\n{planted}  # planted\n")
    try:
        result = _lint_imports(copy_root, contract)
    finally:
        target.write_text(original)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BROKEN" in result.stdout
    assert "planted" not in result.stderr  # broken by the contract, not by a syntax error


def test_the_app_may_reach_the_ledger_through_session(copy_root: Path) -> None:
    target = copy_root / "tui" / "display.py"
    original = target.read_text()
    target.write_text(original + "\nimport session.conduct  # which imports the ledger\n")
    try:
        result = _lint_imports(copy_root, "tui-through-session")
    finally:
        target.write_text(original)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_ledger_may_import_session_models(copy_root: Path) -> None:
    target = copy_root / "ledger" / "store.py"
    original = target.read_text()
    target.write_text(original + "\nimport session.models  # the one door\n")
    try:
        result = _lint_imports(copy_root, "ledger-through-session-models-only")
    finally:
        target.write_text(original)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_app_may_import_the_api_and_the_models(copy_root: Path) -> None:
    target = copy_root / "tui" / "display.py"
    original = target.read_text()
    planted = "from session import api, models, read_model, verdicts\nimport session.api.door\n"
    target.write_text(original + "\n" + planted)
    try:
        result = _lint_imports(copy_root, "tui-through-the-api")
    finally:
        target.write_text(original)
    assert result.returncode == 0, result.stdout + result.stderr
