"""Conducting measurements: a baseline, variants, and interleaved rounds.

What the command line, the full-screen app and the demo call. Every run happens in a
detached worktree outside the person's repository; every result lands in the ledger as
soon as it exists, so an interruption keeps what was measured.

- `executor`: the executor interface, and the one that runs real processes;
- `baseline`: the adaptive baseline and its split-half check (three outcomes);
- variants (one factor each, from a revision or a patch) live in `session.variants`;
- `loop` and `round`: the round loop over an executor, and the round around it;
- `recovery`: live and stale rounds, and opening a round as this process's.

The names callers use are re-exported here (`from session import conduct`), each
imported when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from measure.lazy_names import loader

if TYPE_CHECKING:
    from session.conduct.baseline import (
        DEFAULT_MAX_RUNS,
        DEFAULT_RUNS,
        Judgement,
        Outcome,
        baseline_id,
        baseline_words,
        judge_baseline,
        outcome,
        outcome_text,
        outcome_words,
        record_baseline,
        repair_words,
        reset_procedure,
        stored_outcome,
        supported_band,
    )
    from session.conduct.common import (
        BASELINE_ARM,
        BadInput,
        ConductError,
        GateRefused,
        Progress,
        ProgressFn,
        WorkloadBroken,
        cleanup_stale_worktrees,
    )
    from session.conduct.executor import Executor, ProcessExecutor, check_workloads
    from session.conduct.loop import MAX_ATTEMPTS
    from session.conduct.recovery import RoundBusy, live_round, recover_stale_rounds
    from session.conduct.round import gate_round, run_round
    from session.variants.resolve import resolve_variants
    from session.variants.snapshot import add_variant
    from session.variants.warnings import MANY_FILES, many_files, missing_uncommitted

# Imported on first use (PEP 562): `gpuopt compare` imports session.conduct.compare, which
# must not pay for the ledger, pydantic models, git and telemetry its siblings import.
_WHERE = {
    "DEFAULT_MAX_RUNS": "session.conduct.baseline",
    "DEFAULT_RUNS": "session.conduct.baseline",
    "Judgement": "session.conduct.baseline",
    "Outcome": "session.conduct.baseline",
    "baseline_id": "session.conduct.baseline",
    "baseline_words": "session.conduct.baseline",
    "judge_baseline": "session.conduct.baseline",
    "outcome": "session.conduct.baseline",
    "outcome_text": "session.conduct.baseline",
    "outcome_words": "session.conduct.baseline",
    "record_baseline": "session.conduct.baseline",
    "repair_words": "session.conduct.baseline",
    "reset_procedure": "session.conduct.baseline",
    "stored_outcome": "session.conduct.baseline",
    "supported_band": "session.conduct.baseline",
    "BASELINE_ARM": "session.conduct.common",
    "BadInput": "session.conduct.common",
    "ConductError": "session.conduct.common",
    "GateRefused": "session.conduct.common",
    "Progress": "session.conduct.common",
    "ProgressFn": "session.conduct.common",
    "WorkloadBroken": "session.conduct.common",
    "cleanup_stale_worktrees": "session.conduct.common",
    "Executor": "session.conduct.executor",
    "ProcessExecutor": "session.conduct.executor",
    "check_workloads": "session.conduct.executor",
    "MAX_ATTEMPTS": "session.conduct.loop",
    "RoundBusy": "session.conduct.recovery",
    "live_round": "session.conduct.recovery",
    "recover_stale_rounds": "session.conduct.recovery",
    "gate_round": "session.conduct.round",
    "run_round": "session.conduct.round",
    "MANY_FILES": "session.variants.warnings",
    "add_variant": "session.variants.snapshot",
    "many_files": "session.variants.warnings",
    "missing_uncommitted": "session.variants.warnings",
    "resolve_variants": "session.variants.resolve",
}


__getattr__ = loader(__name__, _WHERE)


__all__ = [
    "BASELINE_ARM",
    "DEFAULT_MAX_RUNS",
    "DEFAULT_RUNS",
    "MANY_FILES",
    "MAX_ATTEMPTS",
    "BadInput",
    "ConductError",
    "Executor",
    "GateRefused",
    "Judgement",
    "Outcome",
    "ProcessExecutor",
    "Progress",
    "ProgressFn",
    "RoundBusy",
    "WorkloadBroken",
    "add_variant",
    "baseline_id",
    "baseline_words",
    "check_workloads",
    "cleanup_stale_worktrees",
    "gate_round",
    "judge_baseline",
    "live_round",
    "many_files",
    "missing_uncommitted",
    "outcome",
    "outcome_text",
    "outcome_words",
    "record_baseline",
    "recover_stale_rounds",
    "repair_words",
    "reset_procedure",
    "resolve_variants",
    "run_round",
    "stored_outcome",
    "supported_band",
]
