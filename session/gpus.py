"""A box's GPUs, chosen by UUID or index: where a run ran, and which figures may be paired.

The contract names its GPU (`--gpu`); the runner hands it to the workload through
CUDA_VISIBLE_DEVICES and telemetry watches it alone. Each run records the GPU it ran on
(`Run.place`), and figures of different GPUs are never paired unless asked for: two GPUs
of one model still differ (clocks, cooling, the slot's PCIe lanes), and an A/A check
across them is what says whether they are interchangeable.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from session.errors import BadInput

if TYPE_CHECKING:  # annotations only: `compare -N` uses this module, and needs no pydantic
    from session import models as m

__all__ = [
    "VISIBLE",
    "across_words",
    "baseline_gpu_mismatch",
    "gpu_commands",
    "gpu_of",
    "gpu_place",
    "mixed_gpus",
    "placement_lines",
]

VISIBLE = "CUDA_VISIBLE_DEVICES"


def gpu_place(choice: str, telemetry: dict[str, Any]) -> dict[str, str]:
    """A run's place on the contract's GPU: the choice, and the UUID telemetry saw."""
    place = {"gpu": choice}
    gpus = telemetry.get("gpus") or {}
    if len(gpus) == 1:
        ((index, info),) = gpus.items()
        place.update(gpu_index=str(index), gpu_uuid=str(info.get("uuid") or ""))
    return place


def gpu_of(run: m.Run) -> str | None:
    """The GPU a run ran on, by UUID where known, else as the contract named it; None
    when nothing says (a run of a box with one GPU and no choice)."""
    place = run.place or {}
    return place.get("gpu_uuid") or place.get("gpu") or None


def mixed_gpus(runs: Iterable[m.Run]) -> list[str]:
    """The GPUs of runs that say where they ran: more than one means they do not pair."""
    return sorted({g for g in (gpu_of(r) for r in runs) if g})


def gpu_commands(commands: Sequence[str], gpus: Sequence[str], across: bool) -> list[str]:
    """`gpuopt compare --gpus`: each command given its GPU (one GPU for all, or one per
    command; one command on several GPUs is the A/A check across them). Figures of
    different GPUs are paired only when `across` says so."""
    gpus = [g.strip() for g in gpus if g.strip()]
    if not gpus:
        return list(commands)
    if len(commands) == 1 and len(gpus) > 1:
        commands = list(commands) * len(gpus)  # the A/A check: one command, each GPU
    if len(gpus) == 1:
        gpus = gpus * len(commands)
    if len(gpus) != len(commands):
        raise BadInput(
            f"--gpus names {len(gpus)} GPUs for {len(commands)} commands: give one, or one "
            "per command"
        )
    if len(set(gpus)) > 1 and not across:
        raise BadInput(
            f"the commands would run on different GPUs ({', '.join(gpus)}): their figures are "
            "not paired across GPUs unless --across-gpus says so (an A/A check across GPUs: "
            "one command, --gpus A,B --across-gpus)"
        )
    return [f"export {VISIBLE}={shlex.quote(g)}; {c}" for c, g in zip(commands, gpus, strict=True)]


def across_words(gpus: Sequence[str], verdict: str, ratio: float | None, threshold: float) -> str:
    """What an A/A check across two GPUs says: interchangeable at the band, or not."""
    a, b = gpus[0], gpus[1]
    band = f"±{threshold:.1%}"
    if verdict == "SAME":
        return f"GPUs {a} and {b} are interchangeable at {band}: the same command runs as fast"
    if verdict in ("FASTER", "SLOWER") and ratio is not None:
        return (
            f"GPUs {a} and {b} are NOT interchangeable at {band}: on {b} the command takes "
            f"{ratio:.3f}× its time on {a}; keep a session's rounds on one GPU"
        )
    return (
        f"GPUs {a} and {b}: not shown interchangeable at {band} ({verdict}); run the check "
        "longer (--max-runs) before measuring a session across them"
    )


def baseline_gpu_mismatch(reference: Sequence[m.Run], in_round: Sequence[m.Run]) -> str | None:
    """Why the round's baseline runs cannot be held to their reference: they ran on
    another GPU (or another node's), whose figures are not the reference's to compare."""
    ref, now = mixed_gpus(reference), mixed_gpus(in_round)
    if not ref or not now or set(ref) == set(now):
        return None
    return (
        f"baseline check not made: the reference ran on GPU {', '.join(ref)}, this round on "
        f"{', '.join(now)}, and figures of different GPUs are not compared; record the "
        "baseline on this round's GPU to check it"
    )


def placement_lines(contract: m.Contract) -> list[tuple[str, str]]:
    """Where the contract measures, for the contract pane: its GPU, and its Slurm job's
    settings (label, text); nothing when it measures here, on whatever GPU is default."""
    out = []
    if contract.gpu:
        out.append(("GPU", f"{contract.gpu} (the workloads see it alone)"))
    s = contract.slurm
    if s is not None:
        given = (("partition", s.partition), ("gres", s.gres), ("time", s.time),
                 ("account", s.account))  # fmt: skip
        parts = [f"{k} {v}" for k, v in given if v]
        parts += s.extra
        out.append(("Slurm", " · ".join(parts) or "a job with the cluster's defaults"))
    return out
