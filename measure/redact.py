"""Keep secrets out of what is stored: the values of secret-looking environment variables.

A workload or hook that prints its environment, or fails with a URL that carries a token,
would otherwise put the token into the ledger, which people share and export. Before an
output tail or an error is kept, every value of a variable whose name contains TOKEN,
SECRET or PASSWORD, or ends in _KEY (any case), is replaced by `<redacted NAME>`. Values
shorter than MIN_LENGTH are left alone: they cannot be told apart from ordinary text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

MIN_LENGTH = 4
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|_KEY$", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None


class Redactor:
    """One environment's secret values, matched longest first (a value inside another
    one's must not leave the rest of the longer one behind)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        names: dict[str, str] = {}
        for name, value in env.items():
            if is_secret_name(name) and len(value) >= MIN_LENGTH:
                names.setdefault(value, name)
        self._names = names
        self._pattern = (
            re.compile("|".join(re.escape(v) for v in sorted(names, key=len, reverse=True)))
            if names
            else None
        )

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        text = self._pattern.sub(lambda hit: f"<redacted {self._names[hit.group(0)]}>", text)
        return self._cut_ends(text)

    def _cut_ends(self, text: str) -> str:
        """A stored tail starts where a cut fell, and a shortened error ends where one fell:
        either may hold part of a secret. A start that is the end of a secret, or an end
        that is its beginning (MIN_LENGTH characters or more), is redacted too."""
        for value, name in self._names.items():
            for n in range(len(value) - 1, MIN_LENGTH - 1, -1):
                if text.startswith(value[-n:]):
                    text = f"<redacted part of {name}>" + text[n:]
                    break
            for n in range(len(value) - 1, MIN_LENGTH - 1, -1):
                if text.endswith(value[:n]):
                    text = text[:-n] + f"<redacted part of {name}>"
                    break
        return text


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """`text` with the secret values of `env` (default: this process's) replaced."""
    return Redactor(env)(text)
