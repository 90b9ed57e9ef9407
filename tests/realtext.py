"""Real, messy text from this machine for tests: Debian copyright files (license boilerplate
repeated across packages), changelogs (some not UTF-8) and manual pages under /usr/share."""

from __future__ import annotations

import gzip
import re
from datetime import UTC
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest

DOC_ROOT = Path("/usr/share/doc")
MAN_ROOT = Path("/usr/share/man/man1")


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _read(path: Path) -> str:
    data = path.read_bytes()
    return _decode(gzip.decompress(data) if path.suffix == ".gz" else data)


def real_text_records(limit: int = 900) -> list[dict[str, str]]:
    """Raw rows (id, body, src, package) of up to ``limit`` real documents in a stable order,
    round-robin over copyright files, Debian changelogs and section-1 manual pages, with the
    package (or page) as entity.

    Fails (never skips) when the machine lacks any of the three kinds: tests on real text must
    run in CI (.ci/run checks for the text before the tests start).
    """
    kinds = {
        "copyright": sorted(DOC_ROOT.glob("*/copyright")),
        "changelog": sorted(DOC_ROOT.glob("*/changelog.Debian.gz")),
        "man": sorted(MAN_ROOT.glob("*.1.gz")),
    }
    rows: list[dict[str, str]] = []
    for index in range(max(len(p) for p in kinds.values())):
        for kind, paths in kinds.items():
            if index < len(paths) and len(rows) < limit:
                path = paths[index]
                package = path.parent.name if kind != "man" else path.name.split(".")[0]
                rows.append(
                    {
                        "id": f"{kind}:{package}",
                        "body": _read(path),
                        "src": kind,
                        "package": package,
                    }
                )
    missing = sorted(kind for kind, paths in kinds.items() if not paths)
    if missing:
        pytest.fail(
            f"no real text of kind {missing} under /usr/share (copyright files and "
            "changelog.Debian.gz under /usr/share/doc, manual pages under /usr/share/man/man1): "
            "run the tests on a Debian machine with documentation installed (.ci/run checks)"
        )
    return rows


def real_texts(limit: int = 400) -> list[str]:
    """The texts of :func:`real_text_records`."""
    return [row["body"] for row in real_text_records(limit)]


CHANGELOG_HEADER = re.compile(r"^(\S+) \(([^)]*)\) [^;]*;.*$")
CHANGELOG_TRAILER = re.compile(r"^ -- (.+?) <([^>]+)>\s+(.+?)\s*$")


def changelog_entries(limit: int | None = None) -> list[dict[str, str]]:
    """Every entry of every ``changelog.Debian.gz`` under /usr/share/doc as a raw row: id
    (package folder, entry number), body (the entry's change lines), src ``changelog``, author
    (the signer's e-mail: entities of one maintainer across packages) and created_at (the
    entry's date in UTC). Entries without a parsable signature line are skipped; a changelog
    shipped by two binary packages gives two rows of each entry (real duplicates).

    Fails (never skips) when the machine has no changelogs (.ci/run checks for them).
    """
    paths = sorted(DOC_ROOT.glob("*/changelog.Debian.gz"))
    if not paths:
        pytest.fail("no changelog.Debian.gz under /usr/share/doc: the real-text tests need them")
    rows: list[dict[str, str]] = []
    for path in paths:
        body: list[str] = []
        number = 0
        for line in _read(path).splitlines():
            if CHANGELOG_HEADER.match(line):
                body = []
            elif signed := CHANGELOG_TRAILER.match(line):
                try:
                    when = parsedate_to_datetime(signed.group(3)).astimezone(UTC)
                except (TypeError, ValueError):
                    continue
                text = "\n".join(body).strip()
                if text:
                    rows.append(
                        {
                            "id": f"{path.parent.name}:{number}",
                            "body": text,
                            "src": "changelog",
                            "author": signed.group(2).strip().lower(),
                            "created_at": when.isoformat(),
                        }
                    )
                    number += 1
                body = []
            else:
                body.append(line)
        if limit is not None and len(rows) >= limit:
            return rows[:limit]
    return rows


LICENSE_FIELD = re.compile(r"^License:[ \t]*(.*)$")


def license_texts(min_words: int = 1) -> list[dict[str, str]]:
    """Every license text of every machine-readable (DEP-5) ``copyright`` file under
    /usr/share/doc as a raw row: id (package folder, paragraph number), body (the text under
    a ``License:`` field, continuation lines unfolded, ``.`` lines as blank lines), src
    ``license`` and license (the field's expression, lowercased: the entity, so that copies of
    one license text across packages are one entity). Texts of fewer than ``min_words`` words are
    left out. Fails (never skips) when the machine has no copyright files."""
    paths = sorted(DOC_ROOT.glob("*/copyright"))
    if not paths:
        pytest.fail("no copyright files under /usr/share/doc: the real-text tests need them")
    rows: list[dict[str, str]] = []
    for path in paths:
        lines = _read(path).splitlines()
        number = 0
        for at, line in enumerate(lines):
            field = LICENSE_FIELD.match(line)
            if not field or not field.group(1).strip():
                continue
            body: list[str] = []
            for more in lines[at + 1 :]:
                if not more.startswith((" ", "\t")):
                    break
                text = more.strip()
                body.append("" if text == "." else text)
            text = "\n".join(body).strip()
            if len(text.split()) >= min_words:
                rows.append(
                    {
                        "id": f"{path.parent.name}:{number}",
                        "body": text,
                        "src": "license",
                        "license": field.group(1).strip().lower(),
                    }
                )
                number += 1
    return rows
