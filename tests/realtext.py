"""Real, messy text from this machine for tests: Debian copyright files (license boilerplate
repeated across packages), changelogs (some not UTF-8) and manual pages under /usr/share."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

DOC_ROOT = Path("/usr/share/doc")
MAN_ROOT = Path("/usr/share/man/man1")


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def real_texts(
    limit: int = 400, kinds: tuple[str, ...] = ("copyright", "changelog", "man")
) -> list[str]:
    """Up to ``limit`` real documents in a stable (sorted path) order, round-robin over kinds.

    Skips the calling test when the machine has none (a minimal image without /usr/share/doc).
    """
    sources: dict[str, list[Path]] = {
        "copyright": sorted(DOC_ROOT.glob("*/copyright")),
        "changelog": sorted(DOC_ROOT.glob("*/changelog.Debian.gz")),
        "man": sorted(MAN_ROOT.glob("*.1.gz")),
    }
    paths = [sources[kind] for kind in kinds]
    texts: list[str] = []
    for index in range(max((len(p) for p in paths), default=0)):
        for group in paths:
            if index < len(group) and len(texts) < limit:
                path = group[index]
                data = path.read_bytes()
                texts.append(_decode(gzip.decompress(data) if path.suffix == ".gz" else data))
    if not texts:
        pytest.skip("no real text under /usr/share on this machine")
    return texts
