"""One error root: every error the core says in one line derives from GpuoptError, so a
front end can catch them all by one name and map them to exit codes by their class."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import subprocess
from collections.abc import Callable
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
from measure import errors as measure_errors
from measure.git import GitError, repo_root
from measure.harness import HarnessError, split_spec
from measure.preload import PreloadError
from session import gates, hypotheses, preflight
from session import models as m
from session.errors import (
    BadInput,
    ConductError,
    GateRefusal,
    GateRefused,
    GpuoptError,
    WorkFailed,
)
from session.evidence import EvidenceError
from session.hypotheses import HypothesisError
from session.preflight import PreflightError
from tui import cli


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
        (GateRefusal, GpuoptError),
        (HypothesisError, BadInput),
        (PreflightError, BadInput),
        (HarnessError, BadInput),
        (ConductError, WorkFailed),
    ],
)
def test_every_core_error_has_the_one_root(error: type, family: type) -> None:
    assert issubclass(error, family)
    assert issubclass(error, GpuoptError)


def test_errors_that_were_value_or_runtime_errors_still_are() -> None:
    # callers that caught the builtin keep working
    for error in (EvidenceError, HypothesisError, PreflightError, HarnessError):
        assert issubclass(error, ValueError)
    assert issubclass(PreloadError, RuntimeError)


def test_each_family_is_defined_once() -> None:
    # the older names are the same classes, not look-alikes a handler could miss
    assert GateRefused is GateRefusal
    assert gates.GateRefusal is GateRefusal
    assert (BadInput, WorkFailed, GpuoptError) == (
        measure_errors.BadInput, measure_errors.WorkFailed, measure_errors.GpuoptError,
    )  # fmt: skip
    assert cli.UsageError is BadInput and cli.WorkFailed is WorkFailed


def _raised(make: Callable[[], object]) -> Exception:
    try:
        make()
    except Exception as exc:
        return exc
    raise AssertionError(f"{make} raised nothing")


def _not_a_ledger(tmp: Path) -> object:
    path = tmp / "notes.db"
    path.write_bytes(b"plain text, not SQLite " * 200)
    return Ledger.open(path)


def _no_hypothesis(tmp: Path) -> object:
    with Ledger.open(tmp / "ledger.db") as ledger:
        return hypotheses.get(ledger, "no-such-hypothesis")


def _outside_git(tmp: Path) -> object:
    (tmp / "plain").mkdir()
    return repo_root(tmp / "plain")


def _no_such_checklist_item(tmp: Path) -> object:
    contract = m.Contract(workloads=[m.Workload(name="e2e", command="true")])
    session = m.Session(title="t", repo=str(tmp), contract=contract)
    with Ledger.open(tmp / "ledger.db") as ledger:
        ledger.put(session)
        return preflight.set_checklist(ledger, session, 99, done=True)


def _conduct_failed(tmp: Path) -> object:
    raise ConductError("the setup command failed (exit 3)")


@pytest.mark.parametrize(
    ("make", "code", "words"),
    [
        (lambda tmp: split_spec("torch", "torch:"), 2, "needs a target"),
        (_no_hypothesis, 2, "no hypothesis"),
        (_no_such_checklist_item, 2, "numbered 1 to"),
        (lambda tmp: gates.require(["no baseline yet", "the preflight is open"]), 2, "; the"),
        (_not_a_ledger, 2, "notes.db"),
        (_outside_git, 1, "not inside a git repository"),
        (_conduct_failed, 1, "the setup command failed"),
    ],
)
def test_the_command_line_maps_each_root_to_its_exit_code(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: Callable[[Path], object],
    code: int,
    words: str,
) -> None:
    error = _raised(lambda: make(tmp_path))
    assert isinstance(error, GpuoptError)

    def handler(args: argparse.Namespace) -> int:
        raise error

    assert cli._run(handler, argparse.Namespace()) == code
    err = capsys.readouterr().err
    assert err.startswith("gpuopt: ") and words in err
    assert len(err.strip().splitlines()) == 1 and "internal error" not in err


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


def test_a_gate_refusal_carries_every_reason() -> None:
    refused = GateRefused(["no baseline yet", "", "the preflight is open"])
    assert refused.reasons == ["no baseline yet", "the preflight is open"]
    assert refused.reason == "no baseline yet; the preflight is open"
    assert str(refused) == refused.reason
    assert GateRefused("one reason").reasons == ["one reason"]
    with pytest.raises(ValueError):
        GateRefused([])


# Exceptions of the core that never reach a person, so need no family of the root.
INTERNAL = {
    "measure.telemetry.backend.BackendUnavailable",  # the panel falls back to host telemetry
    "measure.telemetry.nvml._Lost",  # the GPU went away mid-read: said as a sample's state
    "ledger.merge._DryRun",  # rolls a dry run's transaction back, caught where raised
}
# Run by path as a script of its own (standard library and torch only): nothing of ours.
RUN_BY_PATH = {"measure.torch_worker"}


def _core_exceptions() -> dict[str, type]:
    found: dict[str, type] = {}
    for top in ("session", "measure", "ledger"):
        package = importlib.import_module(top)
        for info in pkgutil.walk_packages(package.__path__, top + "."):
            if any(info.name == r or info.name.startswith(r + ".") for r in RUN_BY_PATH):
                continue
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if (
                    isinstance(value, type)
                    and issubclass(value, BaseException)
                    and value.__module__ == info.name
                ):
                    found[f"{info.name}.{value.__qualname__}"] = value
    return found


def test_every_exception_of_the_core_roots_in_gpuopt_error() -> None:
    found = _core_exceptions()
    assert "session.errors.GateRefusal" in found and "ledger.db.LedgerError" in found
    outside = {name for name, cls in found.items() if not issubclass(cls, GpuoptError)}
    assert outside == INTERNAL
