"""One variants package (issue 19, item 4): snapshotting, the race-safe add, the warnings
and the choice of a round's variants each in a file of their own, under session/variants,
and the names `session.conduct` re-exports are those same objects."""

from __future__ import annotations

import re
from pathlib import Path

import session
from session import conduct, variants
from session.variants import add, resolve, snapshot, warnings

ROOT = Path(session.__file__).resolve().parent


def test_no_variant_module_outside_the_package() -> None:
    assert not (ROOT / "variant_add.py").exists()
    assert not (ROOT / "conduct" / "variant.py").exists()
    # and nothing imports them (read from the sources: an editable install elsewhere may
    # still resolve the old names)
    old = re.compile(r"session\.variant_add\b|session\.conduct\.variant\b")
    for folder in ("session", "tui", "tests"):
        for path in (ROOT.parent / folder).rglob("*.py"):
            if path.name != Path(__file__).name:
                assert not old.search(path.read_text(encoding="utf-8")), path


def test_conduct_re_exports_the_packages_objects() -> None:
    assert conduct.add_variant is snapshot.add_variant
    assert conduct.resolve_variants is resolve.resolve_variants
    assert conduct.missing_uncommitted is warnings.missing_uncommitted
    assert conduct.many_files is warnings.many_files
    assert conduct.MANY_FILES == warnings.MANY_FILES


def test_the_front_ends_add_through_the_race_safe_door() -> None:
    # the package's add_variant is the one that unpins refs and names a lost race
    assert variants.add_variant is add.add_variant
    assert variants.variant_warnings is warnings.variant_warnings
