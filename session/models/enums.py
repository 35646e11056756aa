"""The closed sets of gpuopt's vocabulary, one StrEnum each (session.models re-exports them)."""

from __future__ import annotations

from enum import StrEnum


class Direction(StrEnum):
    LOWER = "lower"
    HIGHER = "higher"


class MetricSource(StrEnum):
    WALL = "wall"
    REGEX = "regex"
    JSON = "json"


class WorkloadKind(StrEnum):
    COMMAND = "command"
    TORCH = "torch"
    KERNELBENCH = "kernelbench"


class WorkloadScope(StrEnum):
    ISOLATED = "isolated"
    END_TO_END = "end_to_end"


class HypothesisStatus(StrEnum):
    PROPOSED = "proposed"
    SUPPORTED = "supported"
    WEAKENED = "weakened"
    REJECTED = "rejected"
    REOPENABLE = "reopenable"


class Confidence(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class DispositionChoice(StrEnum):
    KEEP_DEFAULT = "keep-default"
    KEEP_GUARDED = "keep-guarded"
    KEEP_LOCAL = "keep-local"
    REJECT = "reject"
    NEED_EVIDENCE = "need-evidence"


class OptimizationClass(StrEnum):
    """C1 bit-identical; C2 reordered arithmetic, same precision; C3 changed precision or
    approximate math; C4 changed semantics at boundaries, special values, determinism or
    aliasing; NA no floating-point effect."""

    C1 = "C1"
    C2 = "C2"
    C3 = "C3"
    C4 = "C4"
    NA = "NA"


class ResidualClass(StrEnum):
    AS_PREDICTED = "as_predicted"  # metric and mechanism moved as predicted
    NOTHING_MOVED = "nothing_moved"  # mechanism wrong, or the change never reached the machine
    MECHANISM_ONLY = "mechanism_only"  # a compensating cost or a downstream bottleneck
    METRIC_ONLY = "metric_only"  # a confounder; write a new mechanism
    OPPOSITE_SIGN = "opposite_sign"  # keep as evidence and investigate


class RoundStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


class Outcome(StrEnum):
    """A baseline's split-half outcome, in words (the value is what people read); stored
    with the baseline (its `outcome`), beside the coarser `Reproducibility` a gate reads."""

    REPRODUCIBLE = "reproducible"
    DRIFTING = "drifting"  # no cause named: a warning, rounds go on paired
    DRIFT_CAUSED = "drifting, with a cause the telemetry names"
    TOO_NOISY = "too noisy for this band"
    TOO_FEW = "too few runs"  # undecided because the halves are too short to compare
    FAILING = "failing runs"  # some runs gave no value: repair the workload
    NOT_POSITIVE = "zero or negative figures"  # a ratio to them is undefined: another metric

    @property
    def warns(self) -> bool:
        """A round may go on, said with a warning."""
        return self in (Outcome.TOO_NOISY, Outcome.TOO_FEW, Outcome.DRIFTING)

    @property
    def blocks_round(self) -> bool:
        return self in (Outcome.DRIFT_CAUSED, Outcome.FAILING, Outcome.NOT_POSITIVE)


class Reproducibility(StrEnum):
    REPRODUCIBLE = "reproducible"
    NOT_REPRODUCIBLE = "not_reproducible"  # drifting or failing runs: blocks a round
    TOO_NOISY = "too_noisy"  # undecided at its band: a round may go on at a wider one
    UNJUDGED = "unjudged"


class VariantKind(StrEnum):
    CHANGE = "change"
    PROBE = "probe"


class StepName(StrEnum):
    CONTRACT = "contract"
    BASELINE = "baseline"
    PREFLIGHT = "preflight"
    HYPOTHESES = "hypotheses"
    ROUND = "round"
    RESULTS = "results"
    DISPOSITION = "disposition"
    RECORD = "record"


class StepState(StrEnum):
    NOT_STARTED = "not_started"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    BLOCKED = "blocked"


class PreflightQuestion(StrEnum):
    LIFETIME = "lifetime"
    BACKING = "backing"
    RESIDENCY = "residency"
    IDENTITY = "identity"
    MUTATION = "mutation"
    SCHEDULE = "schedule"


class PreflightAnswerKind(StrEnum):
    MEASURED = "measured"
    HANDED_OFF = "handed_off"
    NOT_APPLICABLE = "not_applicable"
    UNKNOWN = "unknown"


class BottleneckClass(StrEnum):
    LAUNCH_BOUND = "launch-bound"
    BANDWIDTH_BOUND = "bandwidth-bound"
    COMPUTE_BOUND = "compute-bound"
    LATENCY_BOUND = "latency-bound"
    HOST_BOUND = "host-bound"
    CAPACITY_BOUND = "capacity-bound"
    UNKNOWN = "unknown"


class ConcernArea(StrEnum):
    PERFORMANCE_EVIDENCE = "performance_evidence"
    NUMERICAL_SAFETY = "numerical_safety"
    FUSION_AND_LAYOUT = "fusion_and_layout"
    LIFETIME_AND_ALLOCATION = "lifetime_and_allocation"
    VIRTUAL_MEMORY = "virtual_memory"
    TIERING_AND_MIGRATION = "tiering_and_migration"
    STATE_REUSE = "state_reuse"
    PERSISTENT_STATE = "persistent_state"
    MEMORY_SCHEDULING = "memory_scheduling"
    KERNEL_EXECUTION = "kernel_execution"
    COMPILER_AND_RUNTIME = "compiler_and_runtime"
    REDUCTIONS_AND_SCANS = "reductions_and_scans"
    TRAINING_PATH = "training_path"
    VALIDATION = "validation"


class EvidenceKind(StrEnum):
    NOTE = "note"
    MEASUREMENT = "measurement"
    FILE = "file"
    NCU_CSV = "ncu_csv"
    TORCH_PROFILE = "torch_profile"


class HookKind(StrEnum):
    SETUP = "setup"
    PREPARE = "prepare"
    CLEANUP = "cleanup"
    CHECK = "check"
