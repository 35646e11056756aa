"""The refs a variant can come from, for the add-variant form: read by measure's git layer
(measure.git_refs, the one user of GitPython), so the app never reaches git itself."""

from __future__ import annotations

from measure.git_refs import SAME_TREE, RefInfo, list_refs

__all__ = ["SAME_TREE", "RefInfo", "list_refs"]
