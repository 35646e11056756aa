"""The vocabulary of gpuopt as pydantic models.

A leaf module: of the project it imports only the measurement vocabulary (trust, verdict,
run status, from `measure.vocabulary`, re-exported here), so the ledger, the engine and the
UI can all depend on it. Every closed set is an enum; every free-text field accepts any
unicode. Validation errors name the field, so a form can show each message under it.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

# The measurement vocabulary is measure's, spelled once there; re-exported as ours.
from measure.vocabulary import RunStatus, Trust, Verdict
from session.models.enums import (
    BottleneckClass as BottleneckClass,
)
from session.models.enums import (
    ConcernArea as ConcernArea,
)
from session.models.enums import (
    Confidence as Confidence,
)

# The closed sets, spelled in session.models.enums; re-exported as this module's names.
from session.models.enums import (
    Direction as Direction,
)
from session.models.enums import (
    DispositionChoice as DispositionChoice,
)
from session.models.enums import (
    EvidenceKind as EvidenceKind,
)
from session.models.enums import (
    HookKind as HookKind,
)
from session.models.enums import (
    HypothesisStatus as HypothesisStatus,
)
from session.models.enums import (
    MetricSource as MetricSource,
)
from session.models.enums import (
    OptimizationClass as OptimizationClass,
)
from session.models.enums import (
    Outcome as Outcome,
)
from session.models.enums import (
    PreflightAnswerKind as PreflightAnswerKind,
)
from session.models.enums import (
    PreflightQuestion as PreflightQuestion,
)
from session.models.enums import (
    Reproducibility as Reproducibility,
)
from session.models.enums import (
    ResidualClass as ResidualClass,
)
from session.models.enums import (
    RoundStatus as RoundStatus,
)
from session.models.enums import (
    StepName as StepName,
)
from session.models.enums import (
    StepState as StepState,
)
from session.models.enums import (
    VariantKind as VariantKind,
)
from session.models.enums import (
    WorkloadKind as WorkloadKind,
)
from session.models.enums import (
    WorkloadScope as WorkloadScope,
)


def new_id() -> str:
    """A short random id: 12 hex digits, unique enough for one ledger."""
    return secrets.token_hex(6)


def utcnow() -> datetime:
    return datetime.now(UTC)


def _omit_when_none(data: Any, fields: tuple[str, ...]) -> Any:
    """Leave out fields added later while they are None: a gpuopt from before them
    (extra="forbid") still reads the row; set, the row is new to it and it says so."""
    if isinstance(data, dict):
        for name in fields:
            if data.get(name, 0) is None:
                del data[name]
    return data


class Model(BaseModel):
    # NaN and infinities are kept as JSON's NaN/Infinity constants: the default would write
    # null, and a NaN error statistic would come back from the ledger as "not measured".
    model_config = ConfigDict(
        extra="forbid",
        validate_assignment=True,
        use_enum_values=False,
        ser_json_inf_nan="constants",
        # Build each model's validator on first use, not at import: the app and the command
        # line start ~0.15 s sooner and pay only for the models they touch.
        defer_build=True,
    )

    def __setattr__(self, name: str, value: Any) -> None:
        # pydantic applies an assignment before the whole-model checks run: when one fails,
        # put the old value back so the model never stays invalid.
        old = self.__dict__.get(name, _MISSING)
        try:
            super().__setattr__(name, value)
        except ValidationError:
            if old is not _MISSING:
                self.__dict__[name] = old
            raise


_MISSING: Any = object()


# ---------------------------------------------------------------------------- helpers


def field_error(model: str, field: str, message: str, value: Any = None) -> ValidationError:
    """An error of a whole-model check, placed on the field a form shows it under (a plain
    ValueError from a model validator would have no field)."""
    return ValidationError.from_exception_data(
        model,
        [
            InitErrorDetails(
                type=PydanticCustomError("value_error", message), loc=(field,), input=value
            )
        ],
    )


def _non_blank(value: str, what: str) -> str:
    if not value or not value.strip():
        raise ValueError(f"{what} must not be empty")
    return value


# ---------------------------------------------------------------------------- contract


class Metric(Model):
    """What is measured and which way is better."""

    name: str = "wall time"
    source: MetricSource = MetricSource.WALL
    pattern: str | None = Field(
        default=None,
        description="regex with a named group `value` (source=regex) or a JSON key (source=json)",
    )
    unit: str = "s"
    direction: Direction = Direction.LOWER

    @model_validator(mode="after")
    def _pattern_matches_source(self) -> Metric:
        if self.source is MetricSource.WALL:
            if self.pattern:
                raise field_error("Metric", "pattern", "a wall-time metric takes no pattern")
            return self
        if not self.pattern:
            raise field_error("Metric", "pattern", f"a {self.source.value} metric needs a pattern")
        if self.source is MetricSource.REGEX:
            import re

            try:
                compiled = re.compile(self.pattern)
            except re.error as exc:
                raise field_error(
                    "Metric", "pattern", f"invalid regex: {exc}", self.pattern
                ) from None
            if "value" not in compiled.groupindex:
                raise field_error(
                    "Metric",
                    "pattern",
                    "the regex needs a named group `value`, e.g. (?P<value>[0-9.]+)",
                    self.pattern,
                )
        return self

    @classmethod
    def parse(cls, spec: str, unit: str | None = None, direction: str | None = None) -> Metric:
        """Read `wall`, `regex:PATTERN` or `json:KEY` as the command line writes them."""
        kind, _, rest = spec.partition(":")
        fields: dict[str, Any] = {}
        if kind == "wall" and not rest:
            fields = {"name": "wall time", "source": MetricSource.WALL, "unit": unit or "s"}
        elif kind == "regex":
            fields = {"name": "printed value", "source": MetricSource.REGEX, "pattern": rest}
        elif kind == "json":
            fields = {"name": rest or "json", "source": MetricSource.JSON, "pattern": rest}
        else:
            raise ValueError(f"metric must be wall, regex:PATTERN or json:KEY, not {spec!r}")
        if unit:
            fields["unit"] = unit
        elif kind != "wall":
            fields["unit"] = ""
        if direction:
            fields["direction"] = Direction(direction)
        return cls(**fields)


class Workload(Model):
    """One named case of the workload matrix."""

    name: str
    kind: WorkloadKind = WorkloadKind.COMMAND
    command: str = Field(description="shell command, torch:MODULE:CALLABLE, or kernelbench:PATH")
    env: dict[str, str] = Field(default_factory=dict)
    scope: WorkloadScope = WorkloadScope.END_TO_END
    training: bool = False

    @field_validator("name")
    @classmethod
    def _name_ok(cls, value: str) -> str:
        _non_blank(value, "workload name")
        if any(c in value for c in "=,\n\t") or value != value.strip():
            raise ValueError("workload name must not contain '=', ',', tabs, newlines or edges")
        return value

    @field_validator("command")
    @classmethod
    def _command_ok(cls, value: str) -> str:
        return _non_blank(value, "workload command")

    @classmethod
    def parse(cls, spec: str) -> Workload:
        """Read NAME=COMMAND; the command's prefix chooses the kind."""
        name, sep, command = spec.partition("=")
        if not sep:
            raise ValueError(f"workload must be NAME=COMMAND, not {spec!r}")
        kind = WorkloadKind.COMMAND
        if command.startswith("torch:"):
            kind = WorkloadKind.TORCH
        elif command.startswith("kernelbench:"):
            kind = WorkloadKind.KERNELBENCH
        scope = (
            WorkloadScope.ISOLATED if kind is not WorkloadKind.COMMAND else WorkloadScope.END_TO_END
        )
        return cls(name=name.strip(), kind=kind, command=command, scope=scope)


class Hooks(Model):
    """Commands run around measurements, as hyperfine users expect."""

    setup: str | None = None  # once per round, before
    prepare: str | None = None  # before every run: the reset/restore procedure
    cleanup: str | None = None  # once per round, after


# Said by the model's check and by every form that builds a contract: one text.
NO_WORKLOADS = "at least one workload is needed"


class SlurmSettings(Model):
    """How a baseline or round runs as a Slurm job (`--slurm`): one job on one node."""

    partition: str | None = None
    gres: str | None = Field(default=None, description="e.g. gpu:1")
    time: str | None = Field(default=None, description="the job's time limit, e.g. 1:00:00")
    account: str | None = None
    extra: list[str] = Field(default_factory=list, description="more sbatch options, as given")
    # Where the job's folder (journal, script, log) goes: storage the login node and the
    # compute nodes both see. Default: beside the ledger, <ledger>.jobs/.
    job_dir: str | None = None


class Contract(Model):
    metric: Metric = Field(default_factory=Metric)
    workloads: list[Workload]
    check: str | None = Field(default=None, description="correctness command; exit 0 passes")
    hooks: Hooks = Field(default_factory=Hooks)
    timeout_s: float = Field(default=600.0, gt=0, le=7 * 24 * 3600)
    launcher: str | None = Field(default=None, description="prefix such as `srun -N1 --gpus=1`")
    python: str | None = Field(default=None, description="interpreter for torch workloads")
    threshold: float = Field(default=0.02, gt=0, lt=1)
    slurm: SlurmSettings | None = None  # run baselines and rounds as Slurm jobs
    gpu: str | None = Field(default=None, description="the GPU: its UUID or index")

    @field_validator("workloads")
    @classmethod
    def _workloads_ok(cls, value: list[Workload]) -> list[Workload]:
        if not value:
            raise ValueError(NO_WORKLOADS)
        names = [w.name for w in value]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"workload names must be unique: {', '.join(dupes)}")
        return value

    def stable_hash(self) -> str:
        """Where a job is queued is no part of what is measured (the environment's
        fingerprint says where it ran); an unset GPU hashes as contracts did before it."""
        import hashlib

        leave_out = {"slurm"} | ({"gpu"} if self.gpu is None else set())
        return hashlib.sha256(self.model_dump_json(exclude=leave_out).encode()).hexdigest()[:16]


class Session(Model):
    id: str = Field(default_factory=new_id)
    title: str
    repo: str
    contract: Contract
    created_at: datetime = Field(default_factory=utcnow)
    bottleneck: BottleneckClass = BottleneckClass.UNKNOWN
    bottleneck_evidence: str = ""
    archived: bool = False  # set aside: left out of listings unless asked for, kept whole

    @field_validator("title")
    @classmethod
    def _title_ok(cls, value: str) -> str:
        return _non_blank(value, "title")

    @field_validator("repo")
    @classmethod
    def _repo_ok(cls, value: str) -> str:
        return _non_blank(value, "repository path")


# ---------------------------------------------------------------------------- baseline


class Snapshot(Model):
    id: str = Field(default_factory=new_id)
    commit: str = Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")
    ref: str
    head: str | None = None  # the HEAD commit the snapshot was taken on (None: unborn)
    dirty: bool = False
    warnings: list[str] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)


class GpuInfo(Model):
    index: int = 0
    name: str = ""
    uuid: str = ""
    driver: str = ""
    max_sm_clock_mhz: int | None = None
    max_mem_clock_mhz: int | None = None
    persistence_mode: bool | None = None
    mig_mode: bool | None = None
    memory_total_bytes: int | None = None


class EnvironmentFingerprint(Model):
    gpus: list[GpuInfo] = Field(default_factory=list)
    gpu_note: str = ""  # why there is no GPU information, in one line
    cuda_runtime: str | None = None
    nvcc: str | None = None
    torch: str | None = None
    torch_cuda: str | None = None
    python: str = ""
    os: str = ""
    kernel: str = ""
    cpu_model: str = ""
    cpu_count: int = 0
    hostname: str = ""
    variables: dict[str, str] = Field(default_factory=dict)  # allowlisted only

    def stable_hash(self) -> str:
        """Hash of the fields that define the machine, not its live state."""
        import hashlib

        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


class Baseline(Model):
    id: str  # the Baseline ID: hash of snapshot commit + fingerprint + contract
    session_id: str
    snapshot: Snapshot
    environment: EnvironmentFingerprint
    contract_hash: str
    runs_per_workload: int = Field(default=10, ge=2)
    reference: dict[str, float] = Field(default_factory=dict)  # workload -> median metric
    reproducibility: Reproducibility = Reproducibility.UNJUDGED
    reproducibility_detail: str = ""
    threshold: float | None = None  # the band it was judged at (None: the contract's)
    outcome: Outcome | None = None  # the split-half outcome it was judged with (None: not)
    reset_procedure: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    # While it is being measured: the process doing it (host, pid, start time), so the
    # next start can close a baseline whose process is gone. None once it has ended.
    measured_by: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _judged_has_an_outcome(self) -> Baseline:
        # A judged baseline built without its outcome (a test's, a hand-made one) gets the
        # one its reproducibility means at the least; the conduct and m004 store the exact one.
        # An outcome that no longer fits a reproducibility set after it is replaced the same way.
        r = self.reproducibility
        if r is Reproducibility.UNJUDGED:
            return self
        if self.outcome is None or self.outcome not in _FITS[r]:
            self.__dict__["outcome"] = _FITS[r][0]
        return self

    @model_serializer(mode="wrap")
    def _rows_older_versions_read(self, handler: SerializerFunctionWrapHandler) -> Any:
        return _omit_when_none(handler(self), ("threshold", "measured_by", "outcome"))

    def judged_outcome(self) -> Outcome | None:
        """The stored outcome; None when not judged. One that does not fit the stored
        reproducibility (a copy updated without validation) reads as the least that does."""
        r = self.reproducibility
        if r is Reproducibility.UNJUDGED:
            return None
        return self.outcome if self.outcome in _FITS[r] else _FITS[r][0]


_FITS: dict[Reproducibility, tuple[Outcome, ...]] = {  # the least outcome first
    Reproducibility.REPRODUCIBLE: (Outcome.REPRODUCIBLE,),
    Reproducibility.TOO_NOISY: (Outcome.TOO_NOISY, Outcome.TOO_FEW),
    Reproducibility.NOT_REPRODUCIBLE: (
        Outcome.DRIFTING, Outcome.DRIFT_CAUSED, Outcome.FAILING, Outcome.NOT_POSITIVE,
    ),
}  # fmt: skip


# ---------------------------------------------------------------------------- method


class ChecklistItem(Model):
    number: int = Field(ge=1, le=14)
    done: bool = False
    note: str = ""


class PreflightAnswer(Model):
    session_id: str
    question: PreflightQuestion
    kind: PreflightAnswerKind = PreflightAnswerKind.UNKNOWN
    text: str = ""
    evidence_id: str | None = None
    concern_area: ConcernArea | None = None
    updated_at: datetime = Field(default_factory=utcnow)

    @model_validator(mode="after")
    def _answer_complete(self) -> PreflightAnswer:
        if self.kind is PreflightAnswerKind.HANDED_OFF and self.concern_area is None:
            raise field_error(
                "PreflightAnswer",
                "concern_area",
                "a handed-off question needs the concern area it goes to",
            )
        if self.kind is PreflightAnswerKind.NOT_APPLICABLE and not self.text.strip():
            raise field_error(
                "PreflightAnswer", "text", "say why the question does not apply", self.text
            )
        if self.kind is PreflightAnswerKind.MEASURED and not (
            self.evidence_id or self.text.strip()
        ):
            raise field_error(
                "PreflightAnswer",
                "text",
                "a measured answer needs its evidence or the measurement",
                self.text,
            )
        return self


class Hypothesis(Model):
    id: str = Field(default_factory=new_id)
    session_id: str
    title: str
    symptom: str = ""
    mechanism: str = ""
    preconditions: str = ""
    predicted_effect: str = ""
    predicted_direction: Direction | None = None  # the metric moves down or up
    predicted_evidence: str = ""
    falsifier: str = ""
    confounders: str = ""
    cost: str = ""
    confidence: Confidence = Confidence.MEDIUM
    confidence_update: str = ""  # the observation that would change the confidence
    status: HypothesisStatus = HypothesisStatus.PROPOSED
    reopen_when: str = ""
    concern_areas: list[ConcernArea] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)

    @field_validator("title")
    @classmethod
    def _title_ok(cls, value: str) -> str:
        return _non_blank(value, "title")


class HypothesisEvent(Model):
    """One entry of a hypothesis's append-only history."""

    id: str = Field(default_factory=new_id)
    hypothesis_id: str
    field: Literal["status", "confidence", "created", "edited"]
    from_value: str | None = None
    to_value: str | None = None
    why: str = ""
    at: datetime = Field(default_factory=utcnow)


class Variant(Model):
    id: str = Field(default_factory=new_id)
    session_id: str
    name: str
    hypothesis_id: str | None = None
    snapshot: Snapshot
    kind: VariantKind = VariantKind.CHANGE
    source: str = ""  # the git ref or patch file it came from
    diff_stat: str = ""
    files_changed: int = 0
    created_at: datetime = Field(default_factory=utcnow)

    @field_validator("name")
    @classmethod
    def _name_ok(cls, value: str) -> str:
        _non_blank(value, "variant name")
        if value in {"baseline"} or any(c in value for c in ", \n\t"):
            raise ValueError("variant name must not be 'baseline' or contain spaces or commas")
        return value

    @property
    def probe(self) -> bool:
        return self.kind is VariantKind.PROBE


class Evidence(Model):
    id: str = Field(default_factory=new_id)
    session_id: str
    hypothesis_id: str | None = None
    variant_id: str | None = None
    kind: EvidenceKind = EvidenceKind.NOTE
    title: str = ""
    text: str = ""
    path: str | None = None
    summary: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)


# ---------------------------------------------------------------------------- rounds


class Round(Model):
    id: str = Field(default_factory=new_id)
    session_id: str
    baseline_id: str
    number: int = Field(default=1, ge=1)
    variant_ids: list[str] = Field(default_factory=list)
    seed: int = 0
    min_blocks: int = Field(default=10, ge=2)
    max_blocks: int = Field(default=30, ge=2)
    threshold: float = Field(default=0.02, gt=0, lt=1)
    budget_s: float | None = Field(default=None, gt=0)
    status: RoundStatus = RoundStatus.RUNNING
    blocks: int = 0
    baseline_check: float | None = None  # ratio of baseline in round vs reference
    baseline_reproduced: bool | None = None
    summary: dict[str, Any] = Field(default_factory=dict)  # the method's search-round fields
    started_at: datetime = Field(default_factory=utcnow)
    ended_at: datetime | None = None
    # Who measures it while it runs: a second live round on the session names them, and a
    # round whose process is gone from this host is known to be stale, not live.
    pid: int | None = None
    host: str | None = None
    error: str | None = None  # why it failed, when it did

    @model_validator(mode="after")
    def _blocks_ordered(self) -> Round:
        if self.max_blocks < self.min_blocks:
            raise field_error(
                "Round", "max_blocks", "max_blocks must be at least min_blocks", self.max_blocks
            )
        return self


class RunLaunch(StrEnum):
    PROCESS = "process"  # a process of its own, started from nothing
    PRELOADED = "preloaded"  # forked from an interpreter that had imported torch once


class Run(Model):
    id: str = Field(default_factory=new_id)
    session_id: str
    round_id: str | None = None  # None for baseline reference runs
    baseline_id: str | None = None
    arm: str  # "baseline" or a variant id
    workload: str
    block: int = 0
    attempt: int = 0
    warmup: bool = False
    status: RunStatus = RunStatus.OK
    value: float | None = None
    exit_code: int | None = None
    wall_s: float | None = None
    user_s: float | None = None
    sys_s: float | None = None
    peak_rss_bytes: int | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    trust: Trust = Trust.UNKNOWN
    trust_reasons: list[str] = Field(default_factory=list)
    telemetry: dict[str, Any] = Field(default_factory=dict)  # per-run deltas (energy, ...)
    started_us: int = 0
    ended_us: int = 0
    error: str = ""  # one line saying what went wrong, if anything
    launch: RunLaunch = RunLaunch.PROCESS
    # How the run's leftover descendants were collected: "subreaper" or "environment scan".
    containment: str = ""
    minor_faults: int | None = None  # page faults of the whole process (rusage)
    major_faults: int | None = None
    # A torch replicate's own report: metric label, steady-state warm-up, faults per call,
    # and every worker option in force (flags and environment).
    worker: dict[str, Any] = Field(default_factory=dict)
    # Where it ran, when it ran away from the login side or on a chosen GPU: node, Slurm
    # job id, GPU UUID and index, driver (runs of different GPUs are never paired).
    place: dict[str, str] = Field(default_factory=dict)


class TelemetrySample(Model):
    session_id: str | None = None
    run_id: str | None = None
    t_us: int  # epoch microseconds
    source: Literal["nvml", "host", "replay"] = "host"
    gpu: int | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    clock_reasons: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: float | None = None
    util_gpu: float | None = None
    util_mem: float | None = None
    mem_used_bytes: int | None = None
    pcie_tx_kbps: float | None = None
    pcie_rx_kbps: float | None = None
    pstate: int | None = None
    cpu_percent: float | None = None
    rss_bytes: int | None = None
    load1: float | None = None


class HookRecord(Model):
    id: str = Field(default_factory=new_id)
    session_id: str
    round_id: str | None = None
    variant_id: str | None = None
    kind: HookKind
    command: str
    exit_code: int | None = None
    output_tail: str = ""
    at: datetime = Field(default_factory=utcnow)


class Audit(Model):
    """Mechanism evidence measured in a separate pass from timing."""

    id: str = Field(default_factory=new_id)
    session_id: str
    arm: str  # "baseline" or a variant id
    workload: str
    device: str = "cpu"
    dtype: str = ""
    kernel_launches: int | None = None
    operator_count: int | None = None
    allocation_count: int | None = None
    peak_bytes: int | None = None
    top_ops: list[dict[str, Any]] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)
    notes: list[str] = Field(default_factory=list)  # how a figure was obtained, or why not
    error: str = ""  # why the audit pass failed, in one line (the figures are then None)
    allocated_bytes: int | None = None  # bytes allocated by one call
    peak_source: str = ""  # where peak_bytes comes from (the step's own peak)
    process_peak_bytes: int | None = None  # the whole process's VmHWM, torch included


class ErrorStats(Model):
    """How one output (or gradient) of a variant differs from the reference."""

    output: str = "out"
    shape_equal: bool = True
    dtype_equal: bool = True
    ref_shape: list[int] = Field(default_factory=list)
    new_shape: list[int] = Field(default_factory=list)
    ref_dtype: str = ""
    new_dtype: str = ""
    max_abs: float | None = None
    mean_abs: float | None = None
    max_rel: float | None = None
    ulp_max: float | None = None
    ulp_p50: float | None = None
    ulp_p99: float | None = None
    mismatches: int = 0
    mismatch_share: float = 0.0
    atol: float | None = None
    rtol: float | None = None
    nan_ref: int = 0
    nan_new: int = 0
    inf_ref: int = 0
    inf_new: int = 0
    nonfinite_positions_match: bool = True
    signed_zero_diffs: int = 0
    worst_index: list[int] = Field(default_factory=list)
    bit_identical: bool = False
    worst_trial: int | None = None  # the trial (and its seed) the worst index belongs to
    worst_seed: int | None = None
    worst_ref: float | None = None  # the two values at the worst index
    worst_new: float | None = None
    passed: bool | None = None  # this output alone, at the tolerance (or exactly)
    near_zero_diffs: int = 0  # differences where |ref| <= atol (left out of ULP and rel)
    none_on: str = ""  # "variant" or "baseline": the gradient is None on that side
    closeness: float | None = None  # worst |error| / allowed: 1 is the tolerance's edge
    ulp_sampled: bool = False  # ULP quantiles from a sample (the max is exact)


class CorrectnessResult(Model):
    id: str = Field(default_factory=new_id)
    session_id: str
    variant_id: str
    workload: str
    passed: bool
    trials: int = 1
    seeds: list[int] = Field(default_factory=list)
    exact: bool = False
    stats: list[ErrorStats] = Field(default_factory=list)
    suggested_class: OptimizationClass | None = None
    output_tail: str = ""
    exit_code: int | None = None
    created_at: datetime = Field(default_factory=utcnow)
    class_reason: str = ""  # why that class is suggested, in words
    device: str = ""
    artifacts: list[str] = Field(default_factory=list)  # saved outputs, beside the ledger
    error: str = ""  # the last lines of the exception, when a side failed
    warnings: list[str] = Field(default_factory=list)  # e.g. a redefined get_inputs()
    options: dict[str, Any] = Field(default_factory=dict)  # what the check did and did not try
    stress: list[dict[str, Any]] = Field(default_factory=list)  # one entry per stress trial
    nondeterminism: dict[str, Any] = Field(default_factory=dict)  # repeat-call differences
    cache_key: str = ""  # (baseline snapshot, variant snapshot, seeds, tolerance, options)
    artifact_bytes: int | None = None  # disk taken by the saved outputs of both sides


class Comparison(Model):
    id: str = Field(default_factory=new_id)
    round_id: str
    variant_id: str
    workload: str
    n: int = Field(ge=0)
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    # The confidence of ci_low..ci_high: the stopping rule's, the interval that decided the
    # verdict. None in rows written before it was stored: their interval is the 95% one.
    confidence: float | None = Field(default=None, gt=0, lt=1)
    verdict: Verdict = Verdict.INCONCLUSIVE
    blocks_needed: int | None = None  # for INCONCLUSIVE: estimated more blocks to decide
    min_effect: float | None = None  # for INCONCLUSIVE: the smallest effect it could resolve
    untrusted_runs: int = 0
    failed_runs: int = 0
    error: str = ""  # FAILED/BROKEN: the last lines of the arm's exception
    note: str = ""  # e.g. "dropped from later blocks: its warm-up failed"

    @model_serializer(mode="wrap")
    def _rows_older_versions_read(self, handler: SerializerFunctionWrapHandler) -> Any:
        return _omit_when_none(handler(self), ("min_effect", "confidence"))


class Residual(Model):
    id: str = Field(default_factory=new_id)
    session_id: str
    variant_id: str
    hypothesis_id: str | None = None
    round_id: str | None = None
    suggested: ResidualClass
    confirmed: ResidualClass | None = None
    note: str = ""
    confidence_from: Confidence | None = None
    confidence_to: Confidence | None = None
    created_at: datetime = Field(default_factory=utcnow)


class Disposition(Model):
    id: str = Field(default_factory=new_id)
    session_id: str
    variant_id: str
    choice: DispositionChoice
    optimization_class: OptimizationClass | None = None
    accepted_semantics: bool = False  # explicit acceptance of a C3/C4 change
    guards: list[str] = Field(default_factory=list)
    fallback: str = ""
    failure_cases: list[str] = Field(default_factory=list)
    remaining_bottlenecks: list[str] = Field(default_factory=list)
    reason: str = ""
    reopen_when: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    open_questions: list[str] = Field(default_factory=list)  # preflight unknowns at the time


class StepStatus(Model):
    step: StepName
    state: StepState = StepState.NOT_STARTED
    reason: str = ""


ALL_MODELS: tuple[type[BaseModel], ...] = (
    Metric,
    Workload,
    Hooks,
    Contract,
    Session,
    Snapshot,
    GpuInfo,
    EnvironmentFingerprint,
    Baseline,
    ChecklistItem,
    PreflightAnswer,
    Hypothesis,
    HypothesisEvent,
    Variant,
    Evidence,
    Round,
    Run,
    TelemetrySample,
    HookRecord,
    Audit,
    ErrorStats,
    CorrectnessResult,
    Comparison,
    Residual,
    Disposition,
    StepStatus,
)
