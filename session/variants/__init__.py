"""Variants: one factor each, from a git revision or a patch on the baseline.

- snapshot.py: `add_variant` snapshots one and records it (the checks before it).
- add.py: `add_variant` as the front ends call it: a lost race on the name said as
  such, and no snapshot ref left behind when it is not recorded.
- warnings.py: `variant_warnings`, what adding one tells the person (as data).
- resolve.py: `resolve_variants`, the variants a round measures.
"""

from __future__ import annotations

from session.variants.add import add_variant
from session.variants.resolve import resolve_variants
from session.variants.warnings import (
    MANY_FILES,
    VariantWarning,
    VariantWarningKind,
    many_files,
    missing_uncommitted,
    variant_warnings,
)

__all__ = [
    "MANY_FILES",
    "VariantWarning",
    "VariantWarningKind",
    "add_variant",
    "many_files",
    "missing_uncommitted",
    "resolve_variants",
    "variant_warnings",
]
