"""A package's names loaded on first use (PEP 562 `__getattr__`): a command line then
imports only the modules whose names it touches, not all that the package offers."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping


def loader(package: str, where: Mapping[str, str | tuple[str, str]]) -> Callable[[str], object]:
    """The package's `__getattr__`: `where` maps each name to its owning module, or to
    (its owning module, its name there); a name found is kept in the package, so it is
    looked up once."""

    def load(name: str) -> object:
        found = where.get(name)
        if found is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, owned_as = (found, name) if isinstance(found, str) else found
        # the import statement's own machinery, not importlib.import_module: `python -X
        # importtime` then lists the owner (tests/cli/test_cli_dispatch.py reads it)
        __import__(module)
        value = getattr(sys.modules[module], owned_as)
        setattr(sys.modules[package], name, value)
        return value

    return load
