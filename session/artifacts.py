"""The correctness check's saved outputs on disk: find them, size them, prune them.

The torch check keeps each side's outputs in `<ledger>.artifacts/<session>/<group>/<entry>`
(`group` is `reference` or a variant id; see session.torch_checks.artifacts_dir). An entry
is in use while a stored CorrectnessResult names it in `artifacts`; the rest can go. An
entry written in the last few minutes is kept even so: a running check writes its outputs
before it stores the result that names them.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from session import models as m
from session.ledger_port import LedgerLike

RECENT_S = 15 * 60  # younger unreferenced entries may belong to a check still running


@dataclass(frozen=True)
class ArtifactEntry:
    path: Path
    session_id: str
    size: int  # bytes on disk, every file below it
    referenced: bool  # a stored CorrectnessResult names it
    recent: bool  # written within RECENT_S


def artifacts_root(ledger_path: Path | str) -> Path:
    path = Path(ledger_path)
    return path.parent / f"{path.name}.artifacts"


def tree_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    total = 0
    for top, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += (Path(top) / name).lstat().st_size
            except OSError:  # gone meanwhile
                pass
    return total


def _newest_mtime(path: Path) -> float:
    newest = path.lstat().st_mtime
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                newest = max(newest, (Path(top) / name).lstat().st_mtime)
            except OSError:
                pass
    return newest


def referenced_paths(ledger: LedgerLike) -> set[Path]:
    """Every artifact path a stored row names (resolved): a CorrectnessResult's saved
    outputs, an Evidence row's file (a profile's trace)."""
    return {
        Path(a).resolve() for r in ledger.list(m.CorrectnessResult) for a in r.artifacts if a
    } | {Path(e.path).resolve() for e in ledger.list(m.Evidence) if e.path}


def find_artifacts(ledger_path: Path | str, referenced: set[Path]) -> list[ArtifactEntry]:
    """The entries under the ledger's artifacts folder, oldest session first by name."""
    root = artifacts_root(ledger_path)
    if not root.is_dir():
        return []
    now = time.time()
    out: list[ArtifactEntry] = []
    for session_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for group in sorted(p for p in session_dir.iterdir() if p.is_dir()):
            for entry in sorted(group.iterdir()):
                resolved = entry.resolve()
                used = any(r == resolved or resolved in r.parents for r in referenced)
                out.append(
                    ArtifactEntry(
                        path=entry,
                        session_id=session_dir.name,
                        size=tree_bytes(entry),
                        referenced=used,
                        recent=now - _newest_mtime(entry) < RECENT_S,
                    )
                )
    return out


def prunable(entries: list[ArtifactEntry], everything: bool) -> list[ArtifactEntry]:
    """What prune-artifacts removes: unreferenced, settled entries (or all, with --all)."""
    if everything:
        return list(entries)
    return [e for e in entries if not e.referenced and not e.recent]


def remove(entries: list[ArtifactEntry], ledger_path: Path | str) -> int:
    """Delete the entries, then the folders they leave empty; the bytes freed."""
    freed = 0
    for e in entries:
        if e.path.is_dir() and not e.path.is_symlink():
            shutil.rmtree(e.path, ignore_errors=True)
        else:
            e.path.unlink(missing_ok=True)
        if not e.path.exists():
            freed += e.size
    root = artifacts_root(ledger_path)
    for folder in sorted({e.path.parent for e in entries}, key=lambda p: -len(p.parts)):
        for empty in (folder, folder.parent):
            if empty != root and empty.is_dir() and not any(empty.iterdir()):
                empty.rmdir()
    return freed
