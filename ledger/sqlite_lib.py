"""sqlite-utils, imported without pandas and numpy.

At import time sqlite-utils imports pandas and numpy when they are installed, only to map
their scalar types to column types. The ledger never stores such values (every row is
written from a model, its JSON and plain columns) and its schema is explicit, so that
mapping is never used; yet the imports cost about 0.1 s here and far more on a GPU box
with pandas installed: time the app would spend before its first frame. So they are
hidden for the length of this one import, unless something already imported them. A
later `import numpy` elsewhere works as usual.
"""

from __future__ import annotations

import importlib
import sys

_HIDDEN = ("pandas", "numpy")


def _import_quietly() -> None:
    hidden = [name for name in _HIDDEN if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # makes `import name` fail
    try:
        importlib.import_module("sqlite_utils.migrations")  # and sqlite_utils with it
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


_import_quietly()

from sqlite_utils import Database  # noqa: E402
from sqlite_utils.migrations import Migrations  # noqa: E402

__all__ = ["Database", "Migrations"]
