"""One error root: every error the core says in one line derives from GpuoptError, so a
front end can catch them all by one name and map them to exit codes by their class."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ledger import (
    AmbiguousSessionError,
    CorruptLedgerError,
    Ledger,
    LedgerError,
    NewerLedgerError,
    NotALedgerError,
    ReadOnlyLedgerError,
    SessionNotFoundError,
)
from ledger.store import ConflictError, UnreadableRowError
from measure.git import GitError, repo_root
from measure.preload import PreloadError
from session.errors import BadInput, GateRefused, GpuoptError, WorkFailed
from session.evidence import EvidenceError


@pytest.mark.parametrize(
    ("error", "family"),
    [
        (LedgerError, GpuoptError),
        (NotALedgerError, LedgerError),
        (CorruptLedgerError, LedgerError),
        (NewerLedgerError, LedgerError),
        (ReadOnlyLedgerError, LedgerError),
        (AmbiguousSessionError, LedgerError),
        (SessionNotFoundError, LedgerError),
        (UnreadableRowError, LedgerError),
        (ConflictError, LedgerError),
        (GitError, WorkFailed),
        (PreloadError, WorkFailed),
        (EvidenceError, BadInput),
        (BadInput, GpuoptError),
        (WorkFailed, GpuoptError),
        (GateRefused, GpuoptError),
    ],
)
def test_every_core_error_has_the_one_root(error: type, family: type) -> None:
    assert issubclass(error, family)
    assert issubclass(error, GpuoptError)


def test_errors_that_were_value_or_runtime_errors_still_are() -> None:
    # callers that caught the builtin keep working
    assert issubclass(EvidenceError, ValueError)
    assert issubclass(PreloadError, RuntimeError)


def test_a_real_ledger_error_is_caught_by_the_root(tmp_path: Path) -> None:
    not_a_ledger = tmp_path / "notes.db"
    not_a_ledger.write_bytes(b"this is not SQLite at all, just some text " * 100)
    with pytest.raises(GpuoptError) as caught:
        Ledger.open(not_a_ledger)
    assert isinstance(caught.value, LedgerError)
    assert str(caught.value)  # one line for the person


def test_a_real_git_error_is_caught_by_the_root(tmp_path: Path) -> None:
    outside = tmp_path / "not-a-repository"
    outside.mkdir()
    assert subprocess.run(["git", "-C", str(outside), "rev-parse"], capture_output=True).returncode
    with pytest.raises(GpuoptError, match="not inside a git repository"):
        repo_root(outside)


def test_gate_refused_carries_every_reason() -> None:
    refused = GateRefused(["no baseline yet", "", "the preflight is open"])
    assert refused.reasons == ["no baseline yet", "the preflight is open"]
    assert refused.reason == "no baseline yet; the preflight is open"
    assert str(refused) == refused.reason
    assert GateRefused("one reason").reasons == ["one reason"]
    with pytest.raises(ValueError):
        GateRefused([])
