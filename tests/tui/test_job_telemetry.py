"""The telemetry panel during a Slurm job: the node's samples, read from the job's journal
as the real journal writer writes them, with the job's state (PENDING, RUNNING on which
node and GPU); this box's own samples are not shown meanwhile (issue 24)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import SID, sample_ledger, settle, steady_app

from ledger import Ledger
from measure.journal import JournalWriter, read_from
from measure.slurm import JobState
from session import models as m
from session.cluster.job_telemetry import JobFeed
from session.cluster.journaling import JournalingLedger
from tui.app import TelemetryTick
from tui.widgets.telemetry import TelemetryPanel

PLACE = {"node": "gpunode7", "slurm_job": "4242", "gpu_uuid": "GPU-b-on-node", "gpu_index": "1",
         "driver": "550.54"}  # fmt: skip


def _journal(tmp_path: Path) -> Path:
    """A job's journal: its start line, then two ticks of samples of the node (GPU 0, the
    job's GPU 1, and the host), through the node's journaling ledger."""
    path = tmp_path / "journal.jsonl"
    with Ledger.open(tmp_path / "scratch.db") as scratch, JournalWriter(path, "job-1") as journal:
        journal.write("start", place=PLACE, pid=1)
        node = JournalingLedger(scratch, journal, PLACE)
        for t, util in ((1_000_000, 70.0), (2_000_000, 77.0)):
            node.insert_samples([
                m.TelemetrySample(session_id=SID, t_us=t, source="nvml", gpu=0, util_gpu=3.0),
                m.TelemetrySample(session_id=SID, t_us=t, source="nvml", gpu=1, util_gpu=util,
                                  sm_clock_mhz=1800.0),
                m.TelemetrySample(session_id=SID, t_us=t, source="host", cpu_percent=33.0),
            ])  # fmt: skip
    return path


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_panel_shows_the_jobs_state_and_its_nodes_gpu_samples(tmp_path: Path) -> None:
    journal = _journal(tmp_path)
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID, telemetry="off", replay=[])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(TelemetryPanel)
        app.set_busy(True)  # the round worker's job is under way
        feed = JobFeed("4242", app.job_telemetry)
        feed.on_state(JobState("4242", "PENDING", reason="Resources"))
        await settle(pilot)
        assert panel.where == "Slurm job 4242 PENDING (Resources): no samples until it runs"
        assert "PENDING" in panel.render().plain and not panel.samples

        # this box's sampler goes on: not shown while the job measures elsewhere
        app.post_message(TelemetryTick(m.TelemetrySample(t_us=5, source="nvml", gpu=0,
                                                         util_gpu=5.0)))  # fmt: skip
        feed.on_state(JobState("4242", "RUNNING", node="gpunode7"))
        for entry, _ in read_from(journal, 0):
            feed.on_entry(entry)
        await settle(pilot)
        assert panel.where == "Slurm job 4242 RUNNING on gpunode7, GPU 1 GPU-b-on-node"
        shown = list(panel.samples)
        assert [s.t_us for s in shown] == [1_000_000, 2_000_000]  # one per tick, the node's
        assert [s.util_gpu for s in shown] == [70.0, 77.0]  # GPU 1's, not GPU 0's
        assert {s.cpu_percent for s in shown} == {33.0}  # with the node's host readings
        text = panel.render().plain
        assert "RUNNING on" in text and "gpunode7" in text and "77%" in text

        app.set_busy(False)  # the job is over: the panel is this box's again
        await settle(pilot)
        assert panel.where == "" and "gpunode7" not in panel.render().plain
