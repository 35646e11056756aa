"""The session API: the one door through which a front end reaches the session layer.

`Session(ledger, session_id)` (session.api.door) wraps the session layer's rules, so the
app never calls the store itself; each change returns a `Result`: its value, the warnings
to show and the next step. The whole-ledger reads and writes are in session.api.ledgers.
Beside them this module names every rule, word and error of the session layer a front end
uses (tui/ imports of session nothing else but session.models, session.verdicts and the
read model: tests/test_tui_imports_the_api.py and the `tui-through-the-api` contract).

Each name is imported from the module that owns it when first asked for (PEP 562), so
`gpuopt --help` and `gpuopt compare` pay only for what they use: importing this module
imports nothing of the session layer. `_OWNERS` and the `TYPE_CHECKING` imports name the
same things (a test holds them equal); "x as y" is owned as `x`, named here `y`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from measure.lazy_names import loader

if TYPE_CHECKING:
    from session.api.door import (
        NextStep,
        PreflightEdit,
        Result,
        Session,
        baseline_problem,
        round_problem,
    )
    from session.api.ledgers import (
        backup_ledger,
        bisection,
        bisections,
        find_session,
        ledger_counts,
        ledger_problems,
        listing_rows,
        record_samples,
        sessions,
        unreadable,
        unreadable_rows,
    )
    from session.artifacts import artifacts_root, find_artifacts, prunable, referenced_paths
    from session.artifacts import remove as remove_artifacts
    from session.bands import MIN_THRESHOLD, band
    from session.bisect.conduct import culprit_diff_stats, spec_of_command, spec_of_session
    from session.bisect.conduct import plan as bisect_plan
    from session.bisect.conduct import resume as bisect_resume
    from session.bisect.conduct import start as bisect_start
    from session.bisect.words import answer_lines, commit_marks, cost_line, summary_line
    from session.bisect.words import markdown as bisection_markdown
    from session.blocks import blocks_problem, fewest_blocks
    from session.cluster.bisect_jobs import SlurmSteps
    from session.cluster.jobs import (
        FollowResult,
        cancel_job,
        catch_up,
        find_job,
        follow_job,
        job_options,
        list_jobs,
        submit_job,
    )
    from session.commands import command, launcher_problem
    from session.concerns import DESCRIPTIONS as AREA_DESCRIPTIONS
    from session.concerns import LABELS as CONCERN_LABELS
    from session.concerns import suggest_for
    from session.conduct import (
        DEFAULT_MAX_RUNS,
        DEFAULT_RUNS,
        ConductError,
        GateRefused,
        Outcome,
        Progress,
        baseline_words,
        check_workloads,
        gate_round,
        judge_baseline,
        outcome,
        outcome_words,
        record_baseline,
        repair_words,
        resolve_variants,
        run_round,
        stored_outcome,
        supported_band,
    )
    from session.conduct.baseline import DRIFT_WARNING
    from session.conduct.compare import CompareResult, compare, hyperfine_markdown, samples_csv
    from session.conduct.compare import store as store_comparison
    from session.conduct.executor import shim_warnings
    from session.demo_flow import HYPOTHESES as DEMO_HYPOTHESES
    from session.demo_flow import run_flow, undecided
    from session.dispositions import (
        CLASS_DESCRIPTIONS,
        StatusSuggestion,
        apply_status_suggestion,
        dispose,
        preflight_warnings,
        status_suggestion,
        status_suggestion_in,
    )
    from session.dispositions import DESCRIPTIONS as CHOICE_DESCRIPTIONS
    from session.edits import EditConflict
    from session.errors import BadInput, GateRefusal, GpuoptError, WorkFailed
    from session.evidence import (
        EvidenceError,
        add_file,
        add_measurement,
        add_note,
        import_ncu_csv,
        import_torch_profile,
    )
    from session.evidence import describe as describe_evidence
    from session.format import VERDICT_STYLE, bytes_text, eta_text, ratio_text, verdict_style
    from session.gates import baseline_warning, fields_named, in_form
    from session.gpus import across_words, gpu_commands, placement_lines
    from session.guidance import (
        ROUND_GUIDANCE,
        BaselineKeys,
        RoundKeys,
        narrow_band_question,
        noisy_baseline_next,
        round_next,
        untrusted_round,
    )
    from session.hypotheses import (
        FIELD_LABELS,
        NEEDS_REOPENING,
        HypothesisError,
        add_hypothesis,
        edit_hypothesis,
        hypothesis_for_new_variant,
        hypothesis_for_ref,
        link_variant,
        set_confidence,
        set_status,
        similar_rejected,
        variant_to_link,
    )
    from session.hypotheses import get as get_hypothesis
    from session.hypotheses import history as hypothesis_history
    from session.interpreter import torch_missing
    from session.ledger_access import (
        ENGINE_ERRORS,
        ConflictError,
        Ledger,
        LedgerError,
        default_ledger_path,
        refuse_overwrite,
    )
    from session.ledger_port import LedgerLike
    from session.limits import out_of_range, range_of
    from session.manage import (
        DeleteReport,
        archive_session,
        delete_session,
        missing_refs,
        prune_refs,
        rename_session,
        repos_lacking_refs,
        title_problem,
    )
    from session.md import for_terminal
    from session.merge import merge_ledgers
    from session.next_steps import (
        NO_SESSION,
        StepKeys,
        advised_band_set,
        baseline_drifting_next,
        baseline_missing_next,
        baseline_ok_next,
        baseline_repair_next,
        bottleneck_key_words,
        busy_leave_words,
        busy_next,
        checklist_key_words,
        confirm_residual_words,
        contract_next,
        disposition_next,
        hypotheses_next,
        picker_guidance,
        preflight_next,
        record_next,
        results_next,
        status_update_offer,
    )
    from session.preflight import (
        BOTTLENECKS,
        CHECKLIST,
        KIND_LABELS,
        NOTHING_TO_SAVE,
        QUESTIONS,
        PreflightView,
        set_answer,
        set_bottleneck,
        set_checklist,
    )
    from session.preflight import checklist as preflight_checklist
    from session.preflight import view as preflight_view
    from session.profile.check import check_predictions
    from session.profile.check import compare as compare_profiles
    from session.profile.record import estimate_lines, hypothesis_text
    from session.profile.run import BASELINE as PROFILE_BASELINE
    from session.profile.run import (
        ProfileError,
        baseline_floors,
        latest_profiles,
        open_hint,
        profile_arm,
        shell_advice,
    )
    from session.profile.text import (
        OP_HEAD,
        PAIR_HEAD,
        SHARED_HEAD,
        TENSOR_HEAD,
        fact_lines,
        op_rows,
        pair_rows,
        roofline_lines,
        roofline_series,
        shared_rows,
        tensor_rows,
    )
    from session.record import SessionExport
    from session.record import gather as gather_record
    from session.record import to_json as record_json
    from session.record import to_markdown as record_to_markdown
    from session.record.baselines import said_once
    from session.record.identify import is_record_of
    from session.record.samples import runs_csv
    from session.record.schema import schema_text
    from session.record_files import (
        default_export_dir,
        export_failed_words,
        export_record,
        export_writing_words,
        export_written_words,
        record_for_width,
        record_markdown,
        record_model,
    )
    from session.refs import SAME_TREE, list_refs
    from session.repository import ledger_inside_problem, repository_problem
    from session.residuals import DESCRIPTIONS as RESIDUAL_DESCRIPTIONS
    from session.residuals import (
        ROUND_SUMMARY_FIELDS,
        draft_round_summary,
        record_residual,
        set_round_summary,
    )
    from session.residuals import SHORT as RESIDUAL_WORDS
    from session.residuals import confirm_residual as confirm_residual_class
    from session.serving import beyond_localhost_warning, is_local
    from session.steps import LABELS as STEP_TITLES
    from session.telemetry_access import (
        BackendUnavailable,
        NullMonitor,
        decode_reasons,
        load_scenario,
        make_monitor,
        scenario_names,
    )
    from session.timing import (
        ALLOCATOR_ENV,
        TORCH_KINDS,
        apply_env,
        error_tail,
        metric_label,
        metric_legend,
        metric_text,
        metric_texts,
    )
    from session.torch_checks import HARNESS_CHECK
    from session.variants import VariantWarning, VariantWarningKind, add_variant, variant_warnings

# module -> the names it owns, as named here ("x as y": owned as x, named here y)
_OWNERS: dict[str, str] = {
    "session.api.door": "NextStep, PreflightEdit, Result, Session, baseline_problem, round_problem",
    "session.api.ledgers": (
        "backup_ledger, bisection, bisections, find_session, ledger_counts, ledger_problems, "
        "listing_rows, record_samples, sessions, unreadable, unreadable_rows"
    ),
    "session.artifacts": (
        "artifacts_root, find_artifacts, prunable, referenced_paths, remove as remove_artifacts"
    ),
    "session.bands": "MIN_THRESHOLD, band",
    "session.bisect.conduct": (
        "culprit_diff_stats, plan as bisect_plan, resume as bisect_resume, spec_of_command, "
        "spec_of_session, start as bisect_start"
    ),
    "session.bisect.words": (
        "answer_lines, commit_marks, cost_line, markdown as bisection_markdown, summary_line"
    ),
    "session.blocks": "blocks_problem, fewest_blocks",
    "session.cluster.bisect_jobs": "SlurmSteps",
    "session.cluster.jobs": (
        "FollowResult, cancel_job, catch_up, find_job, follow_job, job_options, list_jobs, "
        "submit_job"
    ),
    "session.commands": "command, launcher_problem",
    "session.concerns": "DESCRIPTIONS as AREA_DESCRIPTIONS, LABELS as CONCERN_LABELS, suggest_for",
    "session.conduct": (
        "DEFAULT_MAX_RUNS, DEFAULT_RUNS, ConductError, GateRefused, Outcome, Progress, "
        "baseline_words, check_workloads, gate_round, judge_baseline, outcome, outcome_words, "
        "record_baseline, repair_words, resolve_variants, run_round, stored_outcome, supported_band"
    ),
    "session.conduct.baseline": "DRIFT_WARNING",
    "session.conduct.compare": (
        "CompareResult, compare, hyperfine_markdown, samples_csv, store as store_comparison"
    ),
    "session.conduct.executor": "shim_warnings",
    "session.demo_flow": "HYPOTHESES as DEMO_HYPOTHESES, run_flow, undecided",
    "session.dispositions": (
        "CLASS_DESCRIPTIONS, DESCRIPTIONS as CHOICE_DESCRIPTIONS, StatusSuggestion, "
        "apply_status_suggestion, dispose, preflight_warnings, status_suggestion, "
        "status_suggestion_in"
    ),
    "session.edits": "EditConflict",
    "session.errors": "BadInput, GateRefusal, GpuoptError, WorkFailed",
    "session.evidence": (
        "EvidenceError, add_file, add_measurement, add_note, describe as describe_evidence, "
        "import_ncu_csv, import_torch_profile"
    ),
    "session.format": "VERDICT_STYLE, bytes_text, eta_text, ratio_text, verdict_style",
    "session.gates": "baseline_warning, fields_named, in_form",
    "session.gpus": "across_words, gpu_commands, placement_lines",
    "session.next_steps": (
        "NO_SESSION, StepKeys, advised_band_set, bottleneck_key_words, busy_leave_words, "
        "checklist_key_words, confirm_residual_words, picker_guidance, status_update_offer, "
        "baseline_drifting_next, baseline_missing_next, baseline_ok_next, "
        "baseline_repair_next, busy_next, contract_next, disposition_next, hypotheses_next, "
        "preflight_next, record_next, results_next"
    ),
    "session.guidance": (
        "ROUND_GUIDANCE, BaselineKeys, RoundKeys, narrow_band_question, noisy_baseline_next, "
        "round_next, untrusted_round"
    ),
    "session.hypotheses": (
        "FIELD_LABELS, NEEDS_REOPENING, HypothesisError, add_hypothesis, edit_hypothesis, get as "
        "get_hypothesis, history as hypothesis_history, hypothesis_for_new_variant, "
        "hypothesis_for_ref, link_variant, set_confidence, set_status, similar_rejected, "
        "variant_to_link"
    ),
    "session.interpreter": "torch_missing",
    "session.ledger_access": (
        "ENGINE_ERRORS, ConflictError, Ledger, LedgerError, default_ledger_path, refuse_overwrite"
    ),
    "session.ledger_port": "LedgerLike",
    "session.limits": "out_of_range, range_of",
    "session.manage": (
        "DeleteReport, archive_session, delete_session, missing_refs, prune_refs, rename_session, "
        "repos_lacking_refs, title_problem"
    ),
    "session.md": "for_terminal",
    "session.merge": "merge_ledgers",
    "session.preflight": (
        "BOTTLENECKS, CHECKLIST, KIND_LABELS, NOTHING_TO_SAVE, QUESTIONS, PreflightView, "
        "checklist as "
        "preflight_checklist, set_answer, set_bottleneck, set_checklist, view as preflight_view"
    ),
    "session.profile.check": "check_predictions, compare as compare_profiles",
    "session.profile.record": "estimate_lines, hypothesis_text",
    "session.profile.run": (
        "BASELINE as PROFILE_BASELINE, ProfileError, baseline_floors, latest_profiles, open_hint, "
        "profile_arm, shell_advice"
    ),
    "session.profile.text": (
        "OP_HEAD, PAIR_HEAD, SHARED_HEAD, TENSOR_HEAD, fact_lines, op_rows, pair_rows, "
        "roofline_lines, roofline_series, shared_rows, tensor_rows"
    ),
    "session.record": (
        "SessionExport, gather as gather_record, to_json as record_json, to_markdown as "
        "record_to_markdown"
    ),
    "session.record.baselines": "said_once",
    "session.record.identify": "is_record_of",
    "session.record.samples": "runs_csv",
    "session.record.schema": "schema_text",
    "session.record_files": (
        "default_export_dir, export_failed_words, export_record, export_writing_words, "
        "export_written_words, record_for_width, record_markdown, record_model"
    ),
    "session.refs": "SAME_TREE, list_refs",
    "session.repository": "ledger_inside_problem, repository_problem",
    "session.residuals": (
        "DESCRIPTIONS as RESIDUAL_DESCRIPTIONS, ROUND_SUMMARY_FIELDS, SHORT as RESIDUAL_WORDS, "
        "confirm_residual as confirm_residual_class, draft_round_summary, record_residual, "
        "set_round_summary"
    ),
    "session.serving": "beyond_localhost_warning, is_local",
    "session.steps": "LABELS as STEP_TITLES",
    "session.telemetry_access": (
        "BackendUnavailable, NullMonitor, decode_reasons, load_scenario, make_monitor, "
        "scenario_names"
    ),
    "session.timing": (
        "ALLOCATOR_ENV, TORCH_KINDS, apply_env, error_tail, metric_label, metric_legend, "
        "metric_text, metric_texts"
    ),
    "session.torch_checks": "HARNESS_CHECK",
    "session.variants": "VariantWarning, VariantWarningKind, add_variant, variant_warnings",
}
# name here -> (its owning module, its name there)
_WHERE: dict[str, tuple[str, str]] = {
    entry.partition(" as ")[2] or entry: (module, entry.partition(" as ")[0])
    for module, entries in _OWNERS.items()
    for entry in entries.split(", ")
}


__getattr__ = loader(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


__all__ = [
    "ALLOCATOR_ENV",
    "AREA_DESCRIPTIONS",
    "BOTTLENECKS",
    "CHECKLIST",
    "CHOICE_DESCRIPTIONS",
    "CLASS_DESCRIPTIONS",
    "CONCERN_LABELS",
    "DEFAULT_MAX_RUNS",
    "DEFAULT_RUNS",
    "DEMO_HYPOTHESES",
    "DRIFT_WARNING",
    "ENGINE_ERRORS",
    "FIELD_LABELS",
    "HARNESS_CHECK",
    "KIND_LABELS",
    "MIN_THRESHOLD",
    "NEEDS_REOPENING",
    "NOTHING_TO_SAVE",
    "NO_SESSION",
    "OP_HEAD",
    "PAIR_HEAD",
    "PROFILE_BASELINE",
    "QUESTIONS",
    "RESIDUAL_DESCRIPTIONS",
    "RESIDUAL_WORDS",
    "ROUND_GUIDANCE",
    "ROUND_SUMMARY_FIELDS",
    "SAME_TREE",
    "SHARED_HEAD",
    "STEP_TITLES",
    "TENSOR_HEAD",
    "TORCH_KINDS",
    "VERDICT_STYLE",
    "BackendUnavailable",
    "BadInput",
    "BaselineKeys",
    "CompareResult",
    "ConductError",
    "ConflictError",
    "DeleteReport",
    "EditConflict",
    "EvidenceError",
    "FollowResult",
    "GateRefusal",
    "GateRefused",
    "GpuoptError",
    "HypothesisError",
    "Ledger",
    "LedgerError",
    "LedgerLike",
    "NextStep",
    "NullMonitor",
    "Outcome",
    "PreflightEdit",
    "PreflightView",
    "ProfileError",
    "Progress",
    "Result",
    "RoundKeys",
    "Session",
    "SessionExport",
    "SlurmSteps",
    "StatusSuggestion",
    "StepKeys",
    "VariantWarning",
    "VariantWarningKind",
    "WorkFailed",
    "across_words",
    "add_file",
    "add_hypothesis",
    "add_measurement",
    "add_note",
    "add_variant",
    "advised_band_set",
    "answer_lines",
    "apply_env",
    "apply_status_suggestion",
    "archive_session",
    "artifacts_root",
    "backup_ledger",
    "band",
    "baseline_drifting_next",
    "baseline_floors",
    "baseline_missing_next",
    "baseline_ok_next",
    "baseline_problem",
    "baseline_repair_next",
    "baseline_warning",
    "baseline_words",
    "beyond_localhost_warning",
    "bisect_plan",
    "bisect_resume",
    "bisect_start",
    "bisection",
    "bisection_markdown",
    "bisections",
    "blocks_problem",
    "bottleneck_key_words",
    "busy_leave_words",
    "busy_next",
    "bytes_text",
    "cancel_job",
    "catch_up",
    "check_predictions",
    "check_workloads",
    "checklist_key_words",
    "command",
    "commit_marks",
    "compare",
    "compare_profiles",
    "confirm_residual_class",
    "confirm_residual_words",
    "contract_next",
    "cost_line",
    "culprit_diff_stats",
    "decode_reasons",
    "default_export_dir",
    "default_ledger_path",
    "delete_session",
    "describe_evidence",
    "dispose",
    "disposition_next",
    "draft_round_summary",
    "edit_hypothesis",
    "error_tail",
    "estimate_lines",
    "eta_text",
    "export_failed_words",
    "export_record",
    "export_writing_words",
    "export_written_words",
    "fact_lines",
    "fewest_blocks",
    "fields_named",
    "find_artifacts",
    "find_job",
    "find_session",
    "follow_job",
    "for_terminal",
    "gate_round",
    "gather_record",
    "get_hypothesis",
    "gpu_commands",
    "hyperfine_markdown",
    "hypotheses_next",
    "hypothesis_for_new_variant",
    "hypothesis_for_ref",
    "hypothesis_history",
    "hypothesis_text",
    "import_ncu_csv",
    "import_torch_profile",
    "in_form",
    "is_local",
    "is_record_of",
    "job_options",
    "judge_baseline",
    "latest_profiles",
    "launcher_problem",
    "ledger_counts",
    "ledger_inside_problem",
    "ledger_problems",
    "link_variant",
    "list_jobs",
    "list_refs",
    "listing_rows",
    "load_scenario",
    "make_monitor",
    "merge_ledgers",
    "metric_label",
    "metric_legend",
    "metric_text",
    "metric_texts",
    "missing_refs",
    "narrow_band_question",
    "noisy_baseline_next",
    "op_rows",
    "open_hint",
    "out_of_range",
    "outcome",
    "outcome_words",
    "pair_rows",
    "picker_guidance",
    "placement_lines",
    "preflight_checklist",
    "preflight_next",
    "preflight_view",
    "preflight_warnings",
    "profile_arm",
    "prunable",
    "prune_refs",
    "range_of",
    "ratio_text",
    "record_baseline",
    "record_for_width",
    "record_json",
    "record_markdown",
    "record_model",
    "record_next",
    "record_residual",
    "record_samples",
    "record_to_markdown",
    "referenced_paths",
    "refuse_overwrite",
    "remove_artifacts",
    "rename_session",
    "repair_words",
    "repos_lacking_refs",
    "repository_problem",
    "resolve_variants",
    "results_next",
    "roofline_lines",
    "roofline_series",
    "round_next",
    "round_problem",
    "run_flow",
    "run_round",
    "runs_csv",
    "said_once",
    "samples_csv",
    "scenario_names",
    "schema_text",
    "sessions",
    "set_answer",
    "set_bottleneck",
    "set_checklist",
    "set_confidence",
    "set_round_summary",
    "set_status",
    "shared_rows",
    "shell_advice",
    "shim_warnings",
    "similar_rejected",
    "spec_of_command",
    "spec_of_session",
    "status_suggestion",
    "status_suggestion_in",
    "status_update_offer",
    "store_comparison",
    "stored_outcome",
    "submit_job",
    "suggest_for",
    "summary_line",
    "supported_band",
    "tensor_rows",
    "title_problem",
    "torch_missing",
    "undecided",
    "unreadable",
    "unreadable_rows",
    "untrusted_round",
    "variant_to_link",
    "variant_warnings",
    "verdict_style",
]
