"""What a Slurm job runs on its compute node: `python -m session.cluster.node JOB_DIR`.

The job's folder (on storage the login node sees) holds `job.json` (what to measure) and
`seed.db` (a consistent copy of the ledger, made with SQLite's backup API). The job copies
the seed to the node's local disk, measures there through the same conductor and runner
as a local baseline or round, with telemetry sampled on the node, and appends every
record it stores to `journal.jsonl` (session.cluster.journaling). It never opens the
ledger itself. SIGTERM (scancel, a time limit's warning) stops it after the current run,
as Ctrl+C stops a local round; the round it closes says so.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ledger import Ledger
from ledger.journal_import import forget_round
from measure.fingerprint import gpu_info
from measure.journal import JournalWriter
from session import conduct
from session.cluster.journaling import JournalingLedger
from session.conduct.common import Progress

__all__ = ["JOB_SPEC", "JOURNAL", "SEED", "main", "progress_entry", "stamp"]

JOB_SPEC, SEED, JOURNAL = "job.json", "seed.db", "journal.jsonl"


def stamp(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Where the job's runs execute: node, job id, and the GPU Slurm gave it (the first
    of CUDA_VISIBLE_DEVICES), with its UUID and driver where NVML answers."""
    env = dict(os.environ if environ is None else environ)
    place = {"node": socket.gethostname().split(".")[0], "slurm_job": env.get("SLURM_JOB_ID", "")}
    gpus, note, _ = gpu_info()
    visible = env.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    chosen = next(
        (g for g in gpus if visible and visible in (str(g["index"]), g["uuid"])),
        gpus[0] if gpus and not visible else None,
    )
    if chosen is not None:
        place.update(gpu_uuid=chosen["uuid"], gpu_index=str(chosen["index"]),
                     driver=chosen["driver"])  # fmt: skip
    else:
        place["gpu_note"] = note or f"no GPU {visible} in NVML's list"
    return place


def progress_entry(p: Progress) -> dict[str, Any]:
    return {
        "phase": p.phase, "message": p.message, "block": p.block, "max_blocks": p.max_blocks,
        "runs_done": p.runs_done, "runs_total": p.runs_total, "eta_s": p.eta_s,
        "comparisons": [c.model_dump(mode="json") for c in p.comparisons],
        "failed_checks": list(p.failed_checks),
    }  # fmt: skip


def _copy_seed(seed: Path, scratch: Path) -> None:
    """The seed copied to local disk with SQLite's backup API (never a file copy)."""
    src = sqlite3.connect(f"file:{quote(seed.resolve().as_posix())}?mode=ro", uri=True)
    dst = sqlite3.connect(scratch)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def _stops() -> threading.Event:
    stop = threading.Event()

    def handler(signum: int, frame: object) -> None:
        if stop.is_set() and signum != signal.SIGHUP:
            raise KeyboardInterrupt
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, handler)
    return stop


def run_job(job_dir: Path) -> int:
    spec = json.loads((job_dir / JOB_SPEC).read_text())
    stop = _stops()
    journal = JournalWriter(job_dir / JOURNAL, spec["uuid"])
    place = stamp()
    journal.write("start", place=place, pid=os.getpid())
    local = Path(tempfile.mkdtemp(prefix=f"gpuopt-job-{spec['uuid'][:8]}-"))
    status, error = "failed", ""
    try:
        if spec["kind"] == "bisect-step":  # its record travels in the spec: no ledger
            from session.cluster.bisect_node import measure_step

            status = measure_step(spec, stop, journal, progress_entry)
        else:
            status = _seeded(job_dir, local, spec, place, stop, journal)
    except KeyboardInterrupt:
        status = "interrupted"
    except Exception as exc:  # said in the journal: the login side shows it
        error = f"{type(exc).__name__}: {exc}".splitlines()[0][:2000]
    finally:
        journal.write("end", status=status, error=error)
        journal.close()
        shutil.rmtree(local, ignore_errors=True)
    return 0 if status in ("completed", "interrupted") else 1


def _seeded(
    job_dir: Path,
    local: Path,
    spec: dict[str, Any],
    place: dict[str, str],
    stop: threading.Event,
    journal: JournalWriter,
) -> str:
    """A baseline or round: measured against a local copy of the ledger's seed."""
    _copy_seed(job_dir / SEED, local / "ledger.db")
    with Ledger.open(local / "ledger.db") as scratch:
        if spec.get("round_id"):  # the login side's placeholder: this job records it
            forget_round(scratch, spec["round_id"])
        job = {"job": spec["uuid"], "job_id": place["slurm_job"], "node": place["node"]}
        ledger = JournalingLedger(scratch, journal, place, job)
        session = scratch.resolve_session(spec["session_id"])
        return _measure(ledger, session, spec, stop, journal)


def _measure(
    ledger: JournalingLedger,
    session: Any,
    spec: dict[str, Any],
    stop: threading.Event,
    journal: JournalWriter,
) -> str:
    from session.telemetry_access import make_monitor

    def progress(p: Progress) -> None:
        journal.write("progress", durable=False, progress=progress_entry(p))

    monitor = (
        make_monitor(ledger.insert_samples, session.id, gpu_choice=session.contract.gpu)
        if spec.get("telemetry")
        else None
    )
    try:
        options = dict(spec.get("options") or {})
        if spec["kind"] == "round":
            rnd = conduct.run_round(
                ledger, session, progress=progress, stop=stop, monitor=monitor,
                round_id=spec.get("round_id"), **options,
            )  # fmt: skip
            return str(rnd.status.value)
        base = conduct.record_baseline(
            ledger, session, progress=progress, stop=stop, monitor=monitor, **options
        )
        return "interrupted" if stop.is_set() else ("completed" if base else "failed")
    finally:
        if monitor is not None:
            monitor.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m session.cluster.node JOB_DIR", file=sys.stderr)
        return 2
    return run_job(Path(args[0]))


if __name__ == "__main__":
    sys.exit(main())
