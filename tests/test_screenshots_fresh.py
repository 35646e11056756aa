"""The screenshots show the current screens: screenshots/MANIFEST.json, written by
scripts/screenshots.py, holds a hash of each source file the screens are drawn from, and
this fails once any of them differs from the file on disk (issue 22: the screenshots showed
an older demo). A content hash, not git history, so a shallow clone checks it too."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "scripts/screenshots.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SHOTS = _script()
REGENERATE = f"regenerate them: {SHOTS.COMMAND} (from the repository root, in the project's venv)"


def _manifest() -> dict[str, object]:
    path: Path = SHOTS.MANIFEST
    assert path.is_file(), f"{path.relative_to(ROOT)} is missing; {REGENERATE}"
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _stale(recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    return [
        f"{p} ({'new' if p not in recorded else 'gone' if p not in now else 'changed'})"
        for p in sorted(recorded.keys() | now.keys())
        if recorded.get(p) != now.get(p)
    ]


def test_the_screenshots_were_made_from_the_current_screens() -> None:
    manifest = _manifest()
    now = SHOTS.source_files()
    assert now, "no source files found: SOURCES names folders that moved"
    recorded = dict(manifest["sources"])  # type: ignore[call-overload]
    stale = _stale(recorded, now)
    assert not stale and manifest["source_hash"] == SHOTS.source_hash(now), (
        f"the screenshots were made at {str(manifest['commit'])[:10]} and these files "
        f"changed since: {', '.join(stale)}; {REGENERATE}"
    )


def test_the_pictures_are_the_ones_the_manifest_vouches_for() -> None:
    recorded = dict(_manifest()["pictures"])  # type: ignore[call-overload]
    now = SHOTS.pictures()
    assert recorded, "the manifest lists no pictures"
    assert not _stale(recorded, now), (
        f"pictures changed without the manifest: {', '.join(_stale(recorded, now))}; {REGENERATE}"
    )


def test_the_readme_shows_only_pictures_that_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.findall(r"\(screenshots/([^)]+)\)", readme)
    assert shown
    assert [n for n in shown if not (SHOTS.OUT / n).is_file()] == []


def test_a_changed_screen_file_is_named(tmp_path: Path) -> None:
    """The staleness rule itself, on a copy: one edited line makes the copy's hash differ."""
    for entry in SHOTS.SOURCES:
        (tmp_path / entry).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "tui/screens/steps").mkdir(parents=True)
    (tmp_path / "tui/screens/steps/round.py").write_text("A = 1\n")
    (tmp_path / "tui/gpuopt.tcss").write_text("Screen {}\n")
    (tmp_path / "tui/screens/__pycache__").mkdir()
    (tmp_path / "tui/screens/__pycache__/x.pyc").write_bytes(b"\0")
    before = SHOTS.source_files(tmp_path)
    assert list(before) == ["tui/gpuopt.tcss", "tui/screens/steps/round.py"]
    (tmp_path / "tui/screens/steps/round.py").write_text("A = 2\n")
    after = SHOTS.source_files(tmp_path)
    assert SHOTS.source_hash(after) != SHOTS.source_hash(before)
    assert _stale(before, after) == ["tui/screens/steps/round.py (changed)"]


def test_the_readme_names_the_files_the_hash_covers() -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    (named,) = re.findall(r"source file of the screens they show \(([^)]*)\)", readme)
    assert tuple(re.findall(r"`([^`]+)`", named)) == SHOTS.SOURCES
