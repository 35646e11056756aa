"""No dead code in the core: vulture at 80% confidence finds nothing in session, measure,
ledger (the app's own check joins when tui is clean)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ("session", "measure", "ledger")


def _vulture(*paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vulture", "--min-confidence", "80", *paths],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_vulture_finds_nothing_in_the_core() -> None:
    result = _vulture(*CORE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_vulture_does_find_planted_dead_code(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("import json\n\ndef f(x):\n    return 1\n    print(x)\n")
    result = _vulture(str(planted))
    assert result.returncode != 0
    assert "unused import 'json'" in result.stdout and "unreachable code" in result.stdout
