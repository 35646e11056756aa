"""The root of gpuopt's errors, at the bottom of the layering so every package can use it.

An error of these families carries one clear line for the person. A front end catches
`GpuoptError` and maps the family to an exit code in one place (the command line: bad input
and refusals exit 2, failed work 1); anything else is an internal error.
"""

from __future__ import annotations

__all__ = ["BadInput", "GpuoptError", "WorkFailed"]


class GpuoptError(Exception):
    """An error with one clear line for the person."""


class BadInput(GpuoptError):
    """What was asked for cannot be: an unknown name, a missing file, a bad number."""


class WorkFailed(GpuoptError):
    """The work itself could not go on: a git command, a worker, a process that failed."""
