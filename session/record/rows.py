"""The record's sections as typed rows: one model per section, each with the keys its
builder in model.py writes, in the order it writes them (the JSON dump keeps its keys).

Stored values are plain JSON here: enums as their values, times as ISO text, so a record
of any version reads back without the ledger's checks (a newer key is kept: `Row`). The
few free-form objects (a check's options, a profiler summary, a round's engine facts)
stay `dict[str, Any]`: their keys are the tool's that made them, not the record's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from session.residuals import ROUND_SUMMARY_FIELDS as SUMMARY


class Row(BaseModel):
    """Rows keep keys this version does not model (a newer export read by an older one)."""

    model_config = ConfigDict(extra="allow")


# ---------------------------------------------------------------------------- session, contract


class HooksRow(Row):
    """The contract's hooks: shell text run around the rounds and before every run."""

    setup: str | None = None
    prepare: str | None = None
    cleanup: str | None = None


class SessionInfo(Row):
    """Who and what: the session and its contract's target metric, flattened."""

    id: str
    title: str
    repo: str
    created_at: str | None = None
    metric: str
    metric_source: str | None = None
    metric_pattern: str | None = None
    direction: str
    unit: str = ""
    metrics: dict[str, str] = Field(default_factory=dict)  # workload -> its figure in words
    threshold: float
    check: str | None = None
    hooks: HooksRow = Field(default_factory=HooksRow)
    launcher: str | None = None
    timeout_s: float = 0.0
    bottleneck: str | None = None
    bottleneck_evidence: str = ""


class MetricRow(Row):
    name: str = "wall time"
    source: str = "wall"
    pattern: str | None = None
    unit: str = "s"
    direction: str = "lower"


class WorkloadSpec(Row):
    """A workload as the contract stores it."""

    name: str
    kind: str = "command"
    command: str
    env: dict[str, str] = Field(default_factory=dict)
    scope: str = "end_to_end"
    training: bool = False


class WorkloadRow(WorkloadSpec):
    """A workload with its figure in words (`metric`)."""

    metric: str = ""


class SlurmRow(Row):
    partition: str | None = None
    gres: str | None = None
    time: str | None = None
    account: str | None = None
    extra: list[str] = Field(default_factory=list)
    job_dir: str | None = None


class ContractRow(Row):
    """The whole contract, as stored."""

    metric: MetricRow = Field(default_factory=MetricRow)
    workloads: list[WorkloadSpec] = Field(default_factory=list)
    check: str | None = None
    hooks: HooksRow = Field(default_factory=HooksRow)
    timeout_s: float = 600.0
    launcher: str | None = None
    python: str | None = None
    threshold: float = 0.02
    slurm: SlurmRow | None = None
    gpu: str | None = None


class StepRow(Row):
    """One of the eight steps: its state and the reason in words."""

    step: str
    state: str
    reason: str = ""


# ---------------------------------------------------------------------------- baselines


class SnapshotRow(Row):
    id: str | None = None
    commit: str
    ref: str
    dirty: bool = False
    head: str | None = None
    warnings: list[str] = Field(default_factory=list)


class GpuRow(Row):
    index: int = 0
    name: str = ""
    uuid: str = ""
    driver: str = ""
    max_sm_clock_mhz: int | None = None
    max_mem_clock_mhz: int | None = None
    persistence_mode: bool | None = None
    mig_mode: bool | None = None
    memory_total_bytes: int | None = None


class EnvironmentRow(Row):
    """The machine a baseline was recorded on."""

    gpus: list[GpuRow] = Field(default_factory=list)
    gpu_note: str = ""
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
    variables: dict[str, str] = Field(default_factory=dict)


class BaselineRow(Row):
    """A baseline: its snapshot, machine, reference medians and split-half outcome."""

    baseline_id: str
    snapshot: SnapshotRow
    environment: EnvironmentRow = Field(default_factory=EnvironmentRow)
    contract_hash: str = ""
    reproducible: bool = False
    reproducibility: str = "unjudged"
    reproducibility_detail: str = ""
    reference: dict[str, float] = Field(default_factory=dict)  # workload -> median
    runs_per_workload: int | None = None
    reset_procedure: str = ""
    created_at: str


# ---------------------------------------------------------------------------- preflight


class PreflightRow(Row):
    """One preflight question and its answer ("unknown" until answered)."""

    session_id: str | None = None
    question: str
    prompt: str = ""
    kind: str = "unknown"
    text: str = ""
    evidence_id: str | None = None
    concern_area: str | None = None
    answered: bool = False
    updated_at: str | None = None


class ChecklistRow(Row):
    number: int
    item: str = ""
    done: bool = False
    note: str = ""


# ---------------------------------------------------------------------------- hypotheses, evidence


class HistoryRow(Row):
    """A change of a hypothesis: its status or confidence, from and to, and why."""

    id: str | None = None
    hypothesis_id: str | None = None
    field: str
    from_value: str | None = None
    to_value: str | None = None
    why: str = ""
    at: str


class HypothesisRow(Row):
    """A hypothesis with every field of the method, its variants and its history."""

    id: str
    session_id: str | None = None
    title: str
    symptom: str = ""
    mechanism: str = ""
    preconditions: str = ""
    predicted_effect: str = ""
    predicted_direction: str | None = None
    predicted_evidence: str = ""
    falsifier: str = ""
    confounders: str = ""
    cost: str = ""
    confidence: str = "medium"
    confidence_update: str = ""
    status: str = "proposed"
    reopen_when: str = ""
    concern_areas: list[str] = Field(default_factory=list)
    created_at: str | None = None
    variants: list[str] = Field(default_factory=list)  # their names
    history: list[HistoryRow] = Field(default_factory=list)
    suggested_status: str | None = None  # "kept, confidence high": what a decision suggests


class EvidenceRow(Row):
    """A note, measurement, file or profiler summary attached to the session."""

    id: str
    session_id: str | None = None
    hypothesis_id: str | None = None
    variant_id: str | None = None
    kind: str
    title: str = ""
    text: str = ""
    path: str | None = None
    summary: dict[str, Any] = Field(default_factory=dict)  # the kind's own figures
    created_at: str | None = None
    variant: str | None = None  # its name
    description: str = ""  # the row in words


class VariantSnapshotRow(Row):
    commit: str
    ref: str
    dirty: bool = False


class VariantRow(Row):
    id: str
    name: str
    hypothesis_id: str | None = None
    snapshot: VariantSnapshotRow
    probe: bool = False
    kind: str = "change"  # change or probe
    source: str = ""
    diff_stat: str = ""
    files_changed: int = 0
    created_at: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _kind_of_older_records(cls, data: Any) -> Any:
        # records before `kind` said only `probe`
        if isinstance(data, dict) and "kind" not in data and data.get("probe"):
            return {**data, "kind": "probe"}
        return data


# ---------------------------------------------------------------------------- rounds


class RoundSummaryRow(Row):
    """The method's round summary (session.residuals.ROUND_SUMMARY_FIELDS): the person's
    text where they wrote it, else drafted in the record's words."""

    baseline_id: str = Field(default="", description=SUMMARY["baseline_id"])
    reset_procedure: str = Field(default="", description=SUMMARY["reset_procedure"])
    hypotheses: str = Field(default="", description=SUMMARY["hypotheses"])
    variants: str = Field(default="", description=SUMMARY["variants"])
    baseline_check: str = Field(default="", description=SUMMARY["baseline_check"])
    results: str = Field(default="", description=SUMMARY["results"])
    confidence_updates: str = Field(default="", description=SUMMARY["confidence_updates"])
    residuals: str = Field(default="", description=SUMMARY["residuals"])
    disposition: str = Field(default="", description=SUMMARY["disposition"])
    next: str = Field(default="", description=SUMMARY["next"])


# ---------------------------------------------------------------------------- checks, audits


class ErrorStatsRow(Row):
    """The error statistics of one output of a check, with its headline in words."""

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
    worst_trial: int | None = None
    worst_seed: int | None = None
    worst_ref: float | None = None
    worst_new: float | None = None
    passed: bool | None = None
    near_zero_diffs: int = 0
    none_on: str = ""
    closeness: float | None = None
    ulp_sampled: bool = False
    headline: str = ""  # NaN/Inf first, then the finite errors


class StressRow(Row):
    """One stress trial of a check (refilled inputs, x100 values, NaN/Inf planted)."""

    kind: str = ""
    passed: bool = False
    failed_outputs: list[str] = Field(default_factory=list)
    mismatches: int | None = None
    nonfinite_positions_match: bool = True
    nan_ref: int | None = None
    nan_new: int | None = None
    inf_ref: int | None = None
    inf_new: int | None = None
    max_abs: float | None = None


class AuditRow(Row):
    """An audit of one arm on one workload: launches, operators, allocations, peak."""

    id: str | None = None
    session_id: str | None = None
    arm: str  # its name
    workload: str
    device: str = "cpu"
    dtype: str = ""
    kernel_launches: int | None = None
    operator_count: int | None = None
    allocation_count: int | None = None
    peak_bytes: int | None = None
    top_ops: list[dict[str, Any]] = Field(default_factory=list)  # the profiler's rows
    created_at: str | None = None
    notes: list[str] = Field(default_factory=list)
    error: str = ""
    allocated_bytes: int | None = None
    peak_source: str = ""
    process_peak_bytes: int | None = None
    arm_id: str  # "baseline" or a variant id
    round: int | None = None


class ResidualRow(Row):
    """What a round left unexplained: the residual class, suggested and confirmed."""

    id: str | None = None
    session_id: str | None = None
    variant_id: str | None = None
    hypothesis_id: str | None = None
    round_id: str | None = None
    suggested: str
    confirmed: str | None = None
    note: str = ""
    confidence_from: str | None = None
    confidence_to: str | None = None
    created_at: str | None = None
    variant: str  # its name
    description: str = ""
    round: int | None = None


# ---------------------------------------------------------------------------- plan


class PlanItem(Row):
    """One figure of the record, its snapshot refs and the commands that measure it again."""

    figure: str
    refs: list[str] = Field(default_factory=list)
    commands: list[str] = Field(default_factory=list)
    note: str = ""
