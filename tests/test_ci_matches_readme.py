"""CI sets up and tests exactly as the README's quick start tells a person to."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)


def test_the_quick_start_installs_the_torch_extra() -> None:
    demo, tests = _quick_start_commands()
    assert "pip install -c constraints.txt -e '.[torch]'" in demo
    assert "gpuopt demo" in demo
    assert "pip install -c constraints.txt -e '.[test,torch]'" in tests


def test_ci_runs_the_readmes_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    _, tests = _quick_start_commands()
    steps = [step.strip() for step in tests.split("&&")]
    install = next(s for s in steps if s.startswith("pip install"))
    run = next(s for s in steps if "pytest" in s)
    assert install in ci
    assert run in ci
    # and the checks the README's Development section names, the layering among them
    for check in ("ruff check .", "ruff format --check .", "mypy", "lint-imports --no-logo"):
        assert check in ci


def test_the_readme_says_where_the_cpu_build_of_torch_is() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in readme
