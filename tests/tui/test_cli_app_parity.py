"""Issue 22 Build 1 (parity): every option of every CLI command a session uses has its
place in the app, or a stated reason why not.

The options are read from the real argparse parsers (`tui.cli.build_parser`), so a new
option fails here until it is given a counterpart (a key, a form field, a palette command)
or a reason. A counterpart names where it lives and a token of its source there (a
binding id, a field name, a palette title): renaming or removing it fails here too. The
known gaps are counted so that their number can only fall.
"""

from __future__ import annotations

import argparse
import inspect
from dataclasses import dataclass

from tui.cli import build_parser
from tui.screens.picker import PickerScreen
from tui.screens.session import SessionScreen
from tui.screens.session_manage import manage_commands
from tui.screens.steps.baseline import BaselinePane
from tui.screens.steps.contract import ContractPane
from tui.screens.steps.disposition import DispositionPane
from tui.screens.steps.hypotheses import HypothesesPane
from tui.screens.steps.preflight import PreflightPane
from tui.screens.steps.record import RecordPane
from tui.screens.steps.results import ResultsPane
from tui.screens.steps.round import RoundPane
from tui.widgets.evidence_form import evidence_form


@dataclass(frozen=True)
class In:
    """The app's counterpart: `token` appears in the source of `where`."""

    where: object
    token: str


@dataclass(frozen=True)
class Why:
    """No counterpart on purpose: the reason, in words."""

    reason: str


@dataclass(frozen=True)
class Gap:
    """No counterpart yet: what is missing (counted; the count may only fall)."""

    missing: str


# Commands outside a session's path (their own tools), each with its reason.
NOT_A_SESSIONS = {
    "compare": "hyperfine-style comparison of bare commands, no session",
    "bisect": "a bisection of commits, with its own record; listed read-only in review (b)",
    "telemetry": "the live GPU view: the app's telemetry panel is its counterpart",
    "review": "the read-only browser of a ledger: the picker's v opens the same screen",
    "demo": "creates a demo repository and session, then opens this app on it",
    "ledger": "maintenance of the ledger file (check, backup, merge, prune), not a session",
    "job": "Slurm jobs of --slurm baselines and rounds: the app follows its own jobs",
}

SCRIPTED = Why("machine-readable output for scripts: the app shows the same rows on screen")
IN_SESSION = Why("the app is opened on the session: the id is not typed")
SLURM_CONTRACT = Why(
    "the app runs baselines and rounds where the contract says: Slurm settings are kept "
    "in the contract by `gpuopt new --slurm-*` and used by the app's r"
)
TELEMETRY_ALWAYS = Why("the app always samples telemetry: its panel and the runs' trust need it")

PARITY: dict[str, In | tuple[In, ...] | Why | Gap] = {
    # sessions / session: the picker
    "sessions --json": SCRIPTED,
    "sessions --all": Why("the picker lists every session, archived ones too"),
    "session rename session": (
        In(PickerScreen, '"picker.rename"'),
        In(manage_commands, "Rename this session"),  # and from inside it, in the palette
    ),
    "session rename title": In(PickerScreen.action_rename, 'Field("title"'),
    "session archive session": (
        In(PickerScreen, '"picker.archive"'),
        In(manage_commands, "Archive this session"),
    ),
    "session archive --undo": In(PickerScreen.action_archive, "archived=not back"),
    "session delete session": (
        In(PickerScreen, '"picker.delete"'),
        In(manage_commands, "Delete this session (asked first)"),
    ),
    "session delete --with-refs": In(PickerScreen.palette_commands, "action_delete, True"),
    "session delete --yes": Why("the app always asks first (ConfirmModal)"),
    # new: the Contract step
    "new --repo": In(ContractPane.body, 'Field("repo"'),
    "new --title": In(ContractPane.body, 'Field("title"'),
    "new --workload": In(ContractPane.body, "workloads-text"),
    "new --metric": In(ContractPane.body, 'Field("metric"'),
    "new --unit": In(ContractPane.body, 'Field("unit"'),
    "new --direction": In(ContractPane.body, '"direction"'),
    "new --check": In(ContractPane.body, 'Field("check"'),
    "new --setup": Gap("the contract form has no per-round setup command"),
    "new --prepare": In(ContractPane.body, 'Field("prepare"'),
    "new --cleanup": Gap("the contract form has no per-round cleanup command"),
    "new --timeout": Gap("the contract form has no per-run timeout"),
    "new --launcher": Gap("the contract form has no launcher prefix"),
    "new --python": Gap("the contract form has no interpreter for torch workloads"),
    "new --gpu": Gap("the contract form has no GPU choice"),
    "new --slurm-partition": Gap("the contract form has no Slurm settings"),
    "new --slurm-gres": Gap("the contract form has no Slurm settings"),
    "new --slurm-time": Gap("the contract form has no Slurm settings"),
    "new --slurm-account": Gap("the contract form has no Slurm settings"),
    "new --slurm-job-dir": Gap("the contract form has no Slurm settings"),
    "new --threshold": In(ContractPane.body, 'Field("threshold"'),
    "new --isolated": Gap("the contract form cannot mark a workload isolated"),
    "new --training": Gap("the contract form cannot mark a training path"),
    "new --env": In(ContractPane.body, "env-text"),
    # open
    "open session": In(PickerScreen, '"picker.open"'),
    "open --telemetry": Why("a launch option of the app itself (`gpuopt open --telemetry`)"),
    # baseline: the Baseline step
    "baseline session": IN_SESSION,
    "baseline --runs": In(BaselinePane.body, 'Field("runs"'),
    "baseline --max-runs": In(BaselinePane.body, 'Field("max_runs"'),
    "baseline --threshold": In(BaselinePane.body, 'Field("threshold"'),
    "baseline --budget": In(BaselinePane.body, 'Field("budget"'),
    "baseline --warmup": In(BaselinePane.body, 'Field("warmup"'),
    "baseline --json": SCRIPTED,
    "baseline --no-telemetry": TELEMETRY_ALWAYS,
    "baseline --slurm": SLURM_CONTRACT,
    "baseline --partition": SLURM_CONTRACT,
    "baseline --gres": SLURM_CONTRACT,
    "baseline --time": SLURM_CONTRACT,
    "baseline --account": SLURM_CONTRACT,
    "baseline --sbatch-arg": SLURM_CONTRACT,
    # variant: the Round step's add-variant form
    "variant add session": IN_SESSION,
    "variant add --name": In(SessionScreen.ask_variant, 'Field("name"'),
    "variant add --ref": In(SessionScreen.ask_variant, 'Field("ref"'),
    "variant add --patch": In(SessionScreen.ask_variant, '"patch"'),
    "variant add --hypothesis": In(SessionScreen.ask_variant, '"hypothesis_id"'),
    "variant add --probe": In(SessionScreen.ask_variant, '"probe"'),
    "variant add --json": SCRIPTED,
    "variant list session": In(RoundPane.body, "variant-table"),
    "variant list --json": SCRIPTED,
    # round: the Round step
    "round session": IN_SESSION,
    "round --variants": Gap("the app's round runs every variant"),
    "round --min-blocks": In(RoundPane.body, 'Field("min_blocks"'),
    "round --max-blocks": In(RoundPane.body, 'Field("max_blocks"'),
    "round --threshold": In(RoundPane.body, 'Field("threshold"'),
    "round --budget": In(RoundPane.body, 'Field("budget"'),
    "round --seed": Why("`gpuopt demo --seed` / the app's seed; the round records the seed used"),
    "round --json": SCRIPTED,
    "round --keep-outputs": Why("a debugging aid for the torch checks' files, CLI only"),
    "round --no-telemetry": TELEMETRY_ALWAYS,
    "round --slurm": SLURM_CONTRACT,
    "round --partition": SLURM_CONTRACT,
    "round --gres": SLURM_CONTRACT,
    "round --time": SLURM_CONTRACT,
    "round --account": SLURM_CONTRACT,
    "round --sbatch-arg": SLURM_CONTRACT,
    # hypothesis: the Hypotheses step (w writes, e edits, t sets the status)
    "hypothesis add session": IN_SESSION,
    "hypothesis add --title": In(HypothesesPane.body, 'Field("title"'),
    "hypothesis add --symptom": In(HypothesesPane.body, 'Field("symptom"'),
    "hypothesis add --mechanism": In(HypothesesPane.body, 'Field("mechanism"'),
    "hypothesis add --preconditions": Gap("the hypothesis form has no preconditions field"),
    "hypothesis add --predicted-effect": In(HypothesesPane.body, '"predicted_effect"'),
    "hypothesis add --predicted-evidence": In(HypothesesPane.body, '"predicted_evidence"'),
    "hypothesis add --falsifier": In(HypothesesPane.body, 'Field("falsifier"'),
    "hypothesis add --confounders": Gap("the hypothesis form has no confounders field"),
    "hypothesis add --cost": Gap("the hypothesis form has no cost field"),
    "hypothesis add --confidence-update": Gap("the hypothesis form has no such field"),
    "hypothesis add --reopen-when": In(SessionScreen.ask_hypothesis_status, '"reopen_when"'),
    "hypothesis add --direction": In(HypothesesPane.body, '"predicted_direction"'),
    "hypothesis add --concern": Gap("the hypothesis form has no concern areas"),
    "hypothesis add --confidence": In(HypothesesPane.body, 'Field("confidence"'),
    "hypothesis add --variant": In(SessionScreen.ask_variant, '"hypothesis_id"'),
    "hypothesis add --json": SCRIPTED,
    "hypothesis edit session": IN_SESSION,
    "hypothesis edit hypothesis": In(HypothesesPane, '"hypotheses.edit"'),
    "hypothesis edit --title": In(HypothesesPane.body, 'Field("title"'),
    "hypothesis edit --symptom": In(HypothesesPane.body, 'Field("symptom"'),
    "hypothesis edit --mechanism": In(HypothesesPane.body, 'Field("mechanism"'),
    "hypothesis edit --preconditions": Gap("the hypothesis form has no preconditions field"),
    "hypothesis edit --predicted-effect": In(HypothesesPane.body, '"predicted_effect"'),
    "hypothesis edit --predicted-evidence": In(HypothesesPane.body, '"predicted_evidence"'),
    "hypothesis edit --falsifier": In(HypothesesPane.body, 'Field("falsifier"'),
    "hypothesis edit --confounders": Gap("the hypothesis form has no confounders field"),
    "hypothesis edit --cost": Gap("the hypothesis form has no cost field"),
    "hypothesis edit --confidence-update": Gap("the hypothesis form has no such field"),
    "hypothesis edit --reopen-when": In(SessionScreen.ask_hypothesis_status, '"reopen_when"'),
    "hypothesis edit --direction": In(HypothesesPane.body, '"predicted_direction"'),
    "hypothesis edit --concern": Gap("the hypothesis form has no concern areas"),
    "hypothesis edit --variant": In(SessionScreen.ask_variant, '"hypothesis_id"'),
    "hypothesis edit --why": Gap("the app records 'edited in the app' as the why"),
    "hypothesis edit --json": SCRIPTED,
    "hypothesis status session": IN_SESSION,
    "hypothesis status hypothesis": In(HypothesesPane, '"hypotheses.status"'),
    "hypothesis status --status": In(SessionScreen.ask_hypothesis_status, '"status"'),
    "hypothesis status --confidence": Gap("the status form sets no confidence"),
    "hypothesis status --why": In(SessionScreen.ask_hypothesis_status, 'Field("why"'),
    "hypothesis status --reopen-when": In(SessionScreen.ask_hypothesis_status, '"reopen_when"'),
    "hypothesis list session": In(HypothesesPane.body, "hyp-table"),
    "hypothesis list --history": Gap("the app shows no hypothesis history"),
    "hypothesis list --json": SCRIPTED,
    "hypothesis residual session": IN_SESSION,
    "hypothesis residual variant": In(SessionScreen.ask_residual, '"variant"'),
    "hypothesis residual --mechanism-moved": Gap("the residual form has no mechanism reading"),
    "hypothesis residual --confirm": In(SessionScreen.ask_residual, '"residual"'),
    "hypothesis residual --confidence": In(DispositionPane, '"disposition.update_status"'),
    "hypothesis residual --status": In(DispositionPane, '"disposition.update_status"'),
    "hypothesis residual --why": In(SessionScreen.ask_residual, 'Field("note"'),
    "hypothesis residual --json": SCRIPTED,
    "hypothesis summary session": IN_SESSION,
    "hypothesis summary round": In(ResultsPane, '"results.older_round"'),
    **{
        f"hypothesis summary --{f}": Gap("the app writes no hypothesis summary fields")
        for f in (
            "baseline-id",
            "reset-procedure",
            "hypotheses",
            "variants",
            "baseline-check",
            "results",
            "confidence-updates",
            "residuals",
            "disposition",
            "next",
        )
    },
    "hypothesis summary --json": SCRIPTED,
    # preflight: the Preflight step
    "preflight session": IN_SESSION,
    "preflight --measured": In(PreflightPane.body, ".kind"),
    "preflight --evidence": In(PreflightPane.body, ".evidence_id"),
    "preflight --hand-off": In(PreflightPane.body, ".concern_area"),
    "preflight --not-applicable": In(PreflightPane.body, ".kind"),
    "preflight --unknown": In(PreflightPane.body, ".kind"),
    "preflight --done": In(PreflightPane, '"preflight.checklist"'),
    "preflight --undone": In(PreflightPane, '"preflight.checklist"'),
    "preflight --note": Gap("the checklist in the app ticks items but takes no note"),
    "preflight --bottleneck": In(PreflightPane, '"preflight.bottleneck"'),
    "preflight --bottleneck-evidence": In(PreflightPane.action_bottleneck, '"evidence"'),
    "preflight --json": SCRIPTED,
    # evidence: the Hypotheses step's + form
    "evidence add session": IN_SESSION,
    "evidence add --hypothesis": In(evidence_form, '"hypothesis_id"'),
    "evidence add --variant": Gap("the evidence form does not link a variant"),
    "evidence add --title": In(evidence_form, 'Field("title"'),
    "evidence add --note": In(evidence_form, 'Field("text"'),
    "evidence add --measurement": Gap("the evidence form takes no measured number"),
    "evidence add --file": In(evidence_form, "FILE"),
    "evidence add --ncu-csv": In(evidence_form, "NCU"),
    "evidence add --torch-profile": In(evidence_form, "TORCH"),
    "evidence add --json": SCRIPTED,
    "evidence list session": In(HypothesesPane.body, "hyp-evidence"),
    "evidence list --json": SCRIPTED,
    # profile
    "profile session": Gap(
        "the app cannot run `gpuopt profile` (tui/screens/profile.py shows none)"
    ),
    "profile --arm": Gap("no profile run in the app"),
    "profile --workload": Gap("no profile run in the app"),
    "profile --steps": Gap("no profile run in the app"),
    "profile --json": SCRIPTED,
    # dispose: the Disposition step's d form
    "dispose session": IN_SESSION,
    "dispose variant": In(DispositionPane, '"disposition.decide"'),
    "dispose --choice": In(SessionScreen.ask_disposition, '"choice"'),
    "dispose --class": In(SessionScreen.ask_disposition, '"optimization_class"'),
    "dispose --accept-semantics": In(SessionScreen.ask_disposition, "accept"),
    "dispose --guard": In(SessionScreen.ask_disposition, 'Field("guards"'),
    "dispose --fallback": In(SessionScreen.ask_disposition, 'Field("fallback"'),
    "dispose --failure-case": In(SessionScreen.ask_disposition, '"failure_cases"'),
    "dispose --remaining": In(SessionScreen.ask_disposition, '"remaining_bottlenecks"'),
    "dispose --reason": In(SessionScreen.ask_disposition, 'Field("reason"'),
    "dispose --reopen-when": In(SessionScreen.ask_disposition, '"reopen_when"'),
    "dispose --json": SCRIPTED,
    # export: the Record step's x, and the palette's export to a folder
    "export session": In(RecordPane, '"record.export"'),
    "export --format": Why("the app's export writes both: the markdown record and its JSON"),
    "export --json": Why("the app's export writes both: the markdown record and its JSON"),
    "export --output": In(manage_commands, "Export the record to a folder"),
    "export --force": Why("the app writes records into a folder of records, never over a file"),
    "export --schema": Why("the schema is for tools; the app writes records, not schemas"),
}

# Only ever lowered: each gap closed takes one off.
KNOWN_GAPS = 45


def _options(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[str]:
    """'command [sub] --option' for every option and positional of every command."""
    out: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                out += _options(child, (*path, name))
        elif path and action.help is not argparse.SUPPRESS:
            if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                continue
            longest = max(action.option_strings, key=len) if action.option_strings else None
            out.append(" ".join((*path, longest or action.dest)))
    return out


def _session_options() -> list[str]:
    return [o for o in _options(build_parser()) if o.split()[0] not in NOT_A_SESSIONS]


def test_every_cli_option_of_a_session_has_an_app_counterpart_or_a_reason() -> None:
    missing = [o for o in _session_options() if o not in PARITY]
    assert not missing, f"options with no app counterpart and no reason: {missing}"


def test_every_counterpart_named_is_there() -> None:
    absent = []
    for option, place in PARITY.items():
        for one in place if isinstance(place, tuple) else (place,):
            if isinstance(one, In) and one.token not in inspect.getsource(one.where):  # type: ignore[arg-type]
                absent.append((option, one.token))
    assert not absent, f"counterparts that are not where the table says: {absent}"


def test_the_table_names_only_real_options_and_real_commands() -> None:
    real = set(_session_options())
    assert not [o for o in PARITY if o not in real], "the table names options the CLI lacks"
    commands = {o.split()[0] for o in _options(build_parser())}
    assert set(NOT_A_SESSIONS) <= commands
    for place in PARITY.values():
        if isinstance(place, Why):
            assert place.reason.strip()
        if isinstance(place, Gap):
            assert place.missing.strip()


def test_the_known_gaps_only_fall() -> None:
    gaps = sorted(o for o, p in PARITY.items() if isinstance(p, Gap))
    assert len(gaps) <= KNOWN_GAPS, gaps
