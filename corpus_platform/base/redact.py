"""Redaction: secrets and personal data never reach metadata, logs, the registry or reports.

Two rules, applied to everything the platform records:

- a value whose *name* looks like a secret (password, token, api_key, credential, ...) is
  replaced by ``[REDACTED]``;
- inside any string, things that look like credentials (key=value secrets, URL passwords,
  bearer tokens, well-known key formats) or personal data (e-mail addresses, phone numbers)
  are replaced by a placeholder naming what was removed.

Hex digests (snapshot ids, fingerprints) are left alone.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

REDACTED = "[REDACTED]"
SECRET_WORDS = {
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "apikey",
    "credential",
    "credentials",
    "cookie",
    "auth",
}
SECRET_PAIRS = {
    ("api", "key"),
    ("access", "key"),
    ("private", "key"),
    ("session", "id"),
    ("secret", "key"),
}


def is_secret_name(name: str) -> bool:
    """True for names like ``db_password``, ``API-KEY``, ``auth``, ``access_token``."""
    words = [
        w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()) if w
    ]
    return any(w in SECRET_WORDS for w in words) or any(p in SECRET_PAIRS for p in pairwise(words))


_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s:@]+):([^/\s@]+)@"), r"\1[REDACTED]@"),
    (
        re.compile(
            r"(?i)\b((?:pass(?:word|wd)?|secret|token|api[_-]?key|access[_-]?key)\s*[=:]\s*)"
            r"(['\"]?)[^\s'\",;]+\2"
        ),
        r"\1[REDACTED]",
    ),
    (re.compile(r"(?i)\bbearer\s+[a-z0-9._~+/=-]{8,}"), "Bearer [REDACTED]"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "[REDACTED-KEY]"),
    (re.compile(r"\b(?:sk|pk|ghp|gho|xox[abpr])[-_][A-Za-z0-9_-]{12,}\b"), "[REDACTED-KEY]"),
    (re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"), "[EMAIL]"),
    (
        re.compile(r"(?<![\w.])(?:\+\d{1,3}[\s.-]?)?\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}(?!\w|\.\d)"),
        "[PHONE]",
    ),
)


def redact_text(text: str) -> str:
    """``text`` with credentials and personal data replaced by placeholders."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact(value: Any, name: str = "") -> Any:
    """A copy of ``value`` (nested dicts, lists, strings) with every secret removed.

    Args:
        value: What is about to be recorded.
        name: The key it is recorded under; a secret-looking name redacts the whole value.
    """
    if name and is_secret_name(name) and value not in (None, "", {}, []):
        return REDACTED
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value
