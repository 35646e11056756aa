"""`gpuopt demo`: a small softmax repository and a session on it, in the app or headless."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from session.api import ENGINE_ERRORS, Session, WorkFailed, record_markdown, torch_missing
from session.api import BadInput as UsageError
from tui.commands.common import open_ledger
from tui.commands.export import on_terminal
from tui.commands.run_opts import engine_monitor, interruptible
from tui.demo.flow import demo_session, run_flow, undecided
from tui.demo.repo import DemoError, create_repo, default_dir
from tui.demo.start import start_session


def run(args: argparse.Namespace) -> int:
    if (args.runs is not None and args.runs < 4) or (args.blocks is not None and args.blocks < 2):
        raise UsageError("--runs must be at least 4 and --blocks at least 2")
    if args.max_blocks is not None and args.max_blocks < (args.blocks or 2):
        raise UsageError("--max-blocks cannot be below --blocks")
    if args.max_runs is not None and args.max_runs < (args.runs or 4):
        raise UsageError("--max-runs cannot be below --runs")
    if not args.no_tui and not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise UsageError(
            "the demo opens the full-screen app and needs a terminal; "
            "add --no-tui to run it headless"
        )

    missing = torch_missing()  # the demo's workload is a PyTorch softmax, either way
    if missing:
        raise WorkFailed(f"the demo needs torch: {missing}")
    try:
        repo = create_repo(Path(args.dir) if args.dir else default_dir())
    except DemoError as exc:
        raise WorkFailed(str(exc)) from None
    print(f"demo repository: {repo}", file=sys.stderr)
    resumed = False
    with open_ledger(args) as ledger:
        if args.no_tui:  # the headless flow writes every step itself: always a new session
            session = demo_session(repo, args.workload)
            Session(ledger).save(session)
        else:
            session, resumed = start_session(ledger, repo, args.workload, fresh=args.fresh)
        print(
            f"session {session.id} in {ledger.path}"
            + (" (resumed; gpuopt demo --fresh starts a new one)" if resumed else ""),
            file=sys.stderr,
        )
        if args.no_tui:
            t0 = time.monotonic()
            last = [0.0]

            def progress(p: object) -> None:
                now = time.monotonic()
                if now - last[0] < 1.0 and getattr(p, "phase", "") not in ("done",):
                    return
                last[0] = now
                print(
                    f"  [{now - t0:5.1f}s] {getattr(p, 'phase', '')}: {getattr(p, 'message', '')}",
                    file=sys.stderr,
                )

            def say(text: str) -> None:
                print(text, file=sys.stderr)

            try:
                # The same telemetry as `gpuopt baseline` and `gpuopt round`: every run
                # gets its samples and its trust verdict.
                with engine_monitor(ledger, session.id) as monitor, interruptible() as stop:
                    outcome = run_flow(
                        ledger,
                        session,
                        **({} if args.runs is None else {"runs": args.runs}),
                        max_runs=args.max_runs,
                        min_blocks=args.blocks,
                        max_blocks=args.max_blocks,
                        seed=args.seed,
                        say=say,
                        progress=progress,
                        monitor=monitor,
                        stop=stop,
                    )
            except ENGINE_ERRORS as exc:
                # what was done is in the ledger: print its record, then say what stopped it
                sys.stdout.write(on_terminal(record_markdown(ledger, session)))
                raise WorkFailed(str(getattr(exc, "reason", "") or exc)) from None
            sys.stdout.write(on_terminal(record_markdown(ledger, session)))
            if outcome.get("interrupted"):
                print("gpuopt: interrupted: the demo stopped after the current run",
                      file=sys.stderr)  # fmt: skip
                return 130  # the command line makes it 128+signal for TERM and HUP
            print(f"demo finished in {time.monotonic() - t0:.0f} s", file=sys.stderr)
            why = undecided(outcome)
            if why:
                raise WorkFailed(f"the demo decided nothing: {why}")
            return 0
        path = ledger.path

    # Here, not at the head: textual (a second's import) only for the full-screen app;
    # --no-tui runs without it.
    from tui.app import GpuoptApp

    app = GpuoptApp(path, session_id=session.id, seed=args.seed, resumed=resumed)
    app.run()
    return app.return_code or 0
