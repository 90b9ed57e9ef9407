"""Personal data in text: e-mail addresses, phone numbers, IP addresses, credit-card numbers
(Luhn-checked) and US social security numbers. Per kind, the config replaces each match with a
placeholder or drops the row; every replacement is counted."""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

PLACEHOLDERS = {
    "email": "<EMAIL>",
    "credit_card": "<CREDIT_CARD>",
    "ssn": "<SSN>",
    "phone": "<PHONE>",
    "ip": "<IP>",
}


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum used by payment card numbers."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card(match: str) -> bool:
    digits = re.sub(r"[ -]", "", match)
    return 13 <= len(digits) <= 19 and luhn_valid(digits)


def _ssn(match: str) -> bool:
    area, group, serial = match.split("-")
    return (
        area not in ("000", "666")
        and not area.startswith("9")
        and group != "00"
        and serial != "0000"
    )


def _ip(match: str) -> bool:
    try:
        ipaddress.ip_address(match)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Detector:
    """One kind of personal data: a pattern and an optional validator of each match."""

    kind: str
    pattern: re.Pattern[str]
    valid: Callable[[str], bool] = lambda _: True


DETECTORS: tuple[Detector, ...] = (
    Detector("email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")),
    Detector("credit_card", re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)"), _card),
    Detector("ssn", re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)"), _ssn),
    Detector(
        "phone",
        re.compile(r"(?<![\w.])(?:\+\d{1,3}[\s.-]?)?\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}(?!\w|\.\d)"),
    ),
    Detector(
        "ip",
        re.compile(
            r"(?<![\w.:])(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7})"
            r"(?![\w:]|\.\w)"
        ),
        _ip,
    ),
)
KINDS = tuple(d.kind for d in DETECTORS)
# A text none of whose detectors can match needs no scrubbing. Each alternative is a necessary
# condition of one detector (\p{Nd} is Python's Unicode \d; ``[^\p{Nd}]`` covers any
# separator), checked for a whole batch at once by RE2, which scans far faster than Python's re.
MIGHT_HOLD_PII = "|".join(
    (
        "@",  # email
        r"(?:\p{Nd}[ -]?){12}\p{Nd}",  # credit_card: 13 or more digits
        r"\p{Nd}{3}-\p{Nd}{2}-\p{Nd}{4}",  # ssn
        r"\p{Nd}{3}\)?[^\p{Nd}]\p{Nd}{3}[^\p{Nd}]\p{Nd}{4}",  # phone
        r"\p{Nd}\.\p{Nd}{1,3}\.\p{Nd}{1,3}\.\p{Nd}|:[0-9A-Fa-f]{0,4}:",  # ip v4, v6
    )
)


@dataclass(frozen=True)
class PiiResult:
    """What one text held: the text with replacements, counts per kind, kinds that drop it."""

    text: str
    replaced: Counter[str]
    found: Counter[str]

    def dropping(self, actions: dict[str, str]) -> list[str]:
        """Kinds found whose configured action is ``drop``."""
        return [kind for kind in KINDS if self.found[kind] and actions.get(kind) == "drop"]


def scrub(text: str, actions: dict[str, str]) -> PiiResult:
    """Find every kind of personal data; replace those whose action is ``replace``."""
    found: Counter[str] = Counter()
    replaced: Counter[str] = Counter()
    for detector in DETECTORS:

        def substitute(match: re.Match[str], detector: Detector = detector) -> str:
            if not detector.valid(match.group(0)):
                return match.group(0)
            found[detector.kind] += 1
            if actions.get(detector.kind) != "replace":
                return match.group(0)
            replaced[detector.kind] += 1
            return PLACEHOLDERS[detector.kind]

        text = detector.pattern.sub(substitute, text)
    return PiiResult(text=text, replaced=replaced, found=found)


def scrub_all(texts: Sequence[str | None], actions: dict[str, str]) -> list[PiiResult | None]:
    """:func:`scrub` every text (None for rows without text), skipping the texts that cannot
    hold personal data; the results equal scrubbing every text."""
    candidates = pc.match_substring_regex(pa.array(texts, pa.large_string()), MIGHT_HOLD_PII)
    out: list[PiiResult | None] = []
    for text, candidate in zip(texts, candidates.to_pylist(), strict=True):
        if text is None:
            out.append(None)
        elif candidate:
            out.append(scrub(text, actions))
        else:
            out.append(PiiResult(text=text, replaced=Counter(), found=Counter()))
    return out
