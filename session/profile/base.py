"""What the profile modules share: the evidence source, the arm names, one run's result and
where traces go (run and shell both import this, so neither imports the other's head)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from session import models as m
from session.artifacts import artifacts_root
from session.errors import BadInput

PROFILE_SOURCE = "gpuopt profile"
BASELINE = "baseline"


class ProfileError(BadInput, ValueError):
    """A profile that cannot be taken (no baseline, no such variant or workload), one line."""


@dataclass
class ProfileRun:
    workload: str
    arm: str  # "baseline" or the variant's id
    evidence: m.Evidence | None = None
    error: str = ""
    output_tail: str = ""


def traces_dir(ledger: Any, session: m.Session) -> Path:
    """Where a session's traces go: beside the ledger, with the check's artifacts."""
    # resolved here, in gpuopt's own directory: a relative --ledger means a path from it
    return artifacts_root(ledger.path).resolve() / session.id / "profiles"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:60] or "workload"


def is_profile(ev: m.Evidence) -> bool:
    return ev.kind is m.EvidenceKind.TORCH_PROFILE and ev.summary.get("source") == PROFILE_SOURCE


def newest_profiles(evidence: list[m.Evidence], arm: str) -> dict[str, m.Evidence]:
    """The newest profile of each workload for one arm ("baseline" or a variant id), of a
    session's evidence oldest first (a view's `evidence`)."""
    found: dict[str, m.Evidence] = {}
    for ev in evidence:
        if is_profile(ev) and ev.summary.get("arm") == arm:
            found[str(ev.summary.get("workload", ""))] = ev
    return found
