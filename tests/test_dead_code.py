"""No dead code in the product: vulture at 80% confidence finds nothing in tui, session,
measure, ledger."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("tui", "session", "measure", "ledger")


def _vulture(*paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vulture", "--min-confidence", "80", *paths],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_vulture_finds_nothing_in_the_product() -> None:
    result = _vulture(*PRODUCT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_vulture_does_find_planted_dead_code(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("import json\n\ndef f(x):\n    return 1\n    print(x)\n")
    result = _vulture(str(planted))
    assert result.returncode != 0
    assert "unused import 'json'" in result.stdout and "unreachable code" in result.stdout
