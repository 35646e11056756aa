"""Keep secrets out of what is stored, by name and by value.

A workload or hook that prints its environment, or fails with a URL that carries a token,
would otherwise put the token into the ledger, which people share and export. Before an
output tail or an error is kept:

- every value of an environment variable gpuopt passes or sees whose name looks secret
  (it contains TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL, or KEY or AUTH as a word of
  it, any case; or it ends in _URL and its value carries a password) is replaced by
  `<redacted NAME>`;
- every known token shape is replaced by `<redacted KIND>`, whatever printed it: GitHub
  (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), AWS access key ids (AKIA, ASIA) and secret
  keys next to their name, Hugging Face (hf_), Anthropic (sk-ant-), OpenAI (sk-, sk-proj-),
  Slack (xox?-), JSON Web Tokens, and the password of any `scheme://user:password@`.

Values shorter than MIN_LENGTH are left alone: they cannot be told apart from ordinary
text. The shapes are our own regular expressions, after the patterns of detect-secrets'
plugins: that library finds secrets line by line in files, to report them, with its
plugin registry, settings and dependencies (requests, PyYAML); here every stored tail is
rewritten in place, in the runner's hot path and in the standard library only (the
measure package imports nothing else).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

MIN_LENGTH = 4
# KEY and AUTH as words of the name (API_KEY, KEY_ID, APIKEY, ANTHROPIC_AUTH, AUTH_HEADER),
# not inside another word (KEYBOARD, MONKEY, GIT_AUTHOR_NAME).
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|_KEY(?:$|_|S$)|^KEY_|(?:API|ACCESS|PRIVATE)KEY"
    r"|AUTH(?:$|_|ORIZATION|TOKEN|KEY)",
    re.IGNORECASE,
)
_URL_WITH_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^@\s/]+@")

# (kind, pattern): the whole match is the secret, or the group `secret` where named.
SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
        ("AWS access key id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
        (
            "AWS secret key",
            r"(?i:aws.{0,20}?(?:secret|key|pwd|pw|password|pass|token).{0,20}?[\s'\":=]+)"
            r"(?P<secret>[0-9a-zA-Z/+]{40})(?![0-9a-zA-Z/+])",
        ),
        ("Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}"),
        ("Anthropic key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
        ("OpenAI key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        ("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
        ("JSON web token", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        (
            "password in a URL",
            r"\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:(?P<secret>[^@\s/]+)@",
        ),
    )
)


def is_secret_name(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None


def is_secret(name: str, value: str) -> bool:
    """The variable `name=value` holds a secret: by its name, a URL's password, or shape."""
    if len(value) < MIN_LENGTH:
        return False
    if is_secret_name(name):
        return True
    if name.upper().endswith("_URL") and _URL_WITH_PASSWORD.search(value):
        return True
    return redact_shapes(value) != value


def redact_shapes(text: str) -> str:
    """`text` with every known token shape replaced by `<redacted KIND>`."""
    for kind, pattern in SHAPES:
        if "secret" in pattern.groupindex:

            def keep_context(hit: re.Match[str], kind: str = kind) -> str:
                start, end = hit.span("secret")
                whole = hit.group(0)
                base = hit.start()
                return whole[: start - base] + f"<redacted {kind}>" + whole[end - base :]

            text = pattern.sub(keep_context, text)
        else:
            text = pattern.sub(f"<redacted {kind}>", text)
    return text


class Redactor:
    """One environment's secret values, matched longest first (a value inside another
    one's must not leave the rest of the longer one behind)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        names: dict[str, str] = {}
        for name, value in env.items():
            if is_secret(name, value):
                names.setdefault(value, name)
        self._names = names
        self._pattern = (
            re.compile("|".join(re.escape(v) for v in sorted(names, key=len, reverse=True)))
            if names
            else None
        )

    def __call__(self, text: str) -> str:
        if not text:
            return text
        if self._pattern is not None:
            text = self._pattern.sub(lambda hit: f"<redacted {self._names[hit.group(0)]}>", text)
            text = self._cut_ends(text)
        return redact_shapes(text)

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
