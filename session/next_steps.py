"""The next step each step of the app names, from the session's state, and the app's other
sentences that name a key: one source for the sentence and its rule, the keys the caller's
(the app's bindings, as the user's keymap has them). The round's own next step, and a
too-noisy baseline's, are in session.guidance."""

from __future__ import annotations

from dataclasses import dataclass

from session.view import SessionView

NO_SESSION = "save the contract first."


@dataclass(frozen=True)
class StepKeys:
    """The keys the steps' next lines name. The defaults are the app's own bindings; the
    app passes them as remapped."""

    next: str = "n"  # the session screen's: the next step
    save: str = "ctrl+s"  # the step's form: save it
    stop: str = "s"  # stop the job after the current run
    baseline_step: str = "2"
    round_step: str = "5"
    record: str = "r"  # the Baseline step's: record it (again)
    bottleneck: str = "b"  # the Preflight step's
    checklist: str = "k"
    write: str = "w"  # the Hypotheses step's: a new hypothesis
    attach: str = "+"  # ... attach evidence to the selected one
    add_variant: str = "a"  # the Round step's
    confirm: str = "c"  # the Results step's: confirm a residual
    decide: str = "d"  # the Disposition step's
    export: str = "x"  # the Record step's


def busy_next(keys: StepKeys, *, cleanly: bool = False) -> str:
    """While a baseline or a round measures."""
    how = "stop cleanly after the current run" if cleanly else "stop after the current run"
    return f"measuring… press {keys.stop} to {how}."


def contract_next(view: SessionView | None, keys: StepKeys) -> str:
    if view is None:
        return f"fill in the contract and press {keys.save} to start the session."
    if view.baseline is None:
        return (
            f"the contract can still change; press {keys.baseline_step} or {keys.next} to go "
            "on to the baseline."
        )
    return f"the contract is fixed by the baseline; go on with {keys.next}."


def baseline_missing_next(keys: StepKeys, *, judged: bool = True) -> str:
    """No baseline yet, or one that was not judged (`judged` False: stopped early?)."""
    if judged:
        return f"press {keys.record} to record the baseline."
    return f"this baseline was not judged (stopped early?): press {keys.record} to record it again."


def baseline_repair_next(repair: str, keys: StepKeys) -> str:
    """A baseline that blocks the round: its repair, then the key that records it again."""
    return f"{repair} ({keys.record})."


def baseline_drifting_next(said: str, keys: StepKeys) -> str:
    return f"{said}. Answer the preflight ({keys.next})."


def baseline_ok_next(keys: StepKeys) -> str:
    return f"answer the preflight ({keys.next})."


def preflight_next(answered: int, questions: int, keys: StepKeys) -> str:
    if answered < questions:
        return (
            f"{answered} of {questions} answered; {keys.save} saves what you wrote, "
            f"{keys.bottleneck} sets the bottleneck, {keys.checklist} ticks the checklist."
        )
    return (
        f"write hypotheses before editing code ({keys.next}); {keys.bottleneck} and "
        f"{keys.checklist} set the bottleneck and checklist."
    )


def hypotheses_next(view: SessionView | None, keys: StepKeys, *, add_variant: str) -> str:
    """`add_variant`: how to reach the Round step's add from here ("5, then a")."""
    if view is None:
        return NO_SESSION
    if not view.hypotheses:
        return f"press {keys.write} to write the first hypothesis, {keys.save} to save it."
    if not view.variants:
        return (
            f"turn a hypothesis into a variant in the Round step ({add_variant}); "
            f"{keys.attach} adds evidence to the selected one."
        )
    return f"go to the round ({keys.next}) or add another hypothesis."


def results_next(to_confirm: str | None, keys: StepKeys) -> str:
    """After a trusted round: a residual to confirm (the first variant's name), or decide."""
    if to_confirm is not None:
        return (
            f"press {keys.confirm} to confirm the residual of {to_confirm}; then decide "
            f"({keys.next})."
        )
    return f"decide each variant ({keys.next})."


def disposition_next(view: SessionView | None, keys: StepKeys) -> str:
    if view is None or not view.variants:
        return "add variants and run a round first."
    todo = [v for v in view.variants if view.disposition_of(v.id) is None]
    if todo:
        return f"select a variant and press {keys.decide} to decide ({len(todo)} left)."
    return f"every variant is decided: read and export the record ({keys.next})."


def record_next(view: SessionView | None, keys: StepKeys) -> str:
    if view is None:
        return NO_SESSION
    return f"press {keys.export} to export the record (markdown and JSON)."


# The app's other sentences that name a key: the key is the caller's, as remapped.


def picker_guidance(new_key: str) -> str:
    """The session list's guidance; `new_key` starts a new session."""
    return (
        f"Pick a session to continue it, or press {new_key} to start a new one. Each session "
        "is one target metric on one repository. Escape in a session comes back here."
    )


def busy_leave_words(busy: str, stop_key: str) -> str:
    """Leaving a session while its job runs is refused: how to stop the job first."""
    return f"A {busy} is running: press {stop_key} to stop it first."


def status_update_offer(update_key: str) -> str:
    """Under the evidence's suggested status of a hypothesis."""
    return f"press {update_key} to update the hypothesis (you are asked first)"


def advised_band_set(threshold: float, run_key: str) -> str:
    """The band a too-noisy baseline supports, filled in by its key."""
    return f"Threshold set to the advised {threshold:.3g}: press {run_key} to run."


def bottleneck_key_words(keys: StepKeys) -> str:
    return f"({keys.bottleneck} sets it)"


def checklist_key_words(keys: StepKeys) -> str:
    return f"({keys.checklist} ticks items)"


def confirm_residual_words(keys: StepKeys) -> str:
    return f"— press {keys.confirm} to confirm"
