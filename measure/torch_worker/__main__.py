"""Entry of the worker, run by path (how gpuopt ships it) or with `python -m`.

Run by path there is no package: this file loads its own folder as one under a private name
(nothing of gpuopt is imported or needed), and takes that folder off sys.path so its module
names never shadow a workload's.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from collections.abc import Callable

PRIVATE = "gpuopt_torch_worker"


def _main() -> Callable[[list[str] | None], int]:
    """The worker's entry, with torch imported: the collector off meanwhile (importing
    torch made a tenth of its CPU time in full collections), and what the imports made
    frozen after (gc.freeze), so that no collection during a job walks torch's objects."""
    gc.disable()
    try:
        return _import_entry()
    finally:
        gc.enable()
        gc.freeze()


def _import_entry() -> Callable[[list[str] | None], int]:
    if __package__:
        from .cli import main

        return main
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    if PRIVATE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            PRIVATE, os.path.join(here, "__init__.py"), submodule_search_locations=[here]
        )
        assert spec and spec.loader
        package = importlib.util.module_from_spec(spec)
        sys.modules[PRIVATE] = package
        spec.loader.exec_module(package)
    entry: Callable[[list[str] | None], int] = importlib.import_module(PRIVATE + ".cli").main
    return entry


if __name__ == "__main__":
    sys.exit(_main()(None))
