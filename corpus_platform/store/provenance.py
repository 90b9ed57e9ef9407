"""Where a snapshot came from: code version, environment digest, required provenance fields."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.hashing import fingerprint

PACKAGE_DIR = Path(__file__).resolve().parents[1]
REQUIRED_FIELDS = (
    "snapshot_id",
    "upstream_snapshots",
    "config_hash",
    "code_version",
    "code_dirty",
    "environment_digest",
)


class ProvenanceError(CorpusError):
    """A materialization is missing a provenance field and must not be recorded."""


@dataclass(frozen=True)
class CodeVersion:
    """The git commit of the package source and whether its tree had uncommitted changes."""

    commit: str
    dirty: bool


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(PACKAGE_DIR), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@cache
def code_version() -> CodeVersion:
    """The commit of the checkout the package runs from ("unversioned" outside git)."""
    commit = _git("rev-parse", "HEAD")
    if commit is None:
        return CodeVersion("unversioned", True)
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ".")
    return CodeVersion(commit, bool(status))


SHARED_CODE = ("base", "config", "engine")  # the code every stage runs, besides its family's


@cache
def stage_code_version(family: str) -> str:
    """A digest of the source a stage family runs: its kernels and its Dagster layer, plus the
    shared layers. Dagster shows an asset's code version and marks the assets downstream of a
    changed one as out of date; a change elsewhere in the package leaves this stage's alone."""
    folders = [*SHARED_CODE, f"kernels/{family}", f"defs/{family}"]
    files = sorted(
        path
        for folder in folders
        for path in (PACKAGE_DIR / folder).rglob("*.py")
        if path.is_file()
    )
    return fingerprint(
        [f"{path.relative_to(PACKAGE_DIR).as_posix()}:{path.read_bytes().hex()}" for path in files]
    )[:16]


@cache
def environment_digest() -> str:
    """A digest of every installed distribution and its version."""
    packages = sorted(
        f"{(d.metadata['Name'] or '').lower()}=={d.version}" for d in metadata.distributions()
    )
    return fingerprint(packages)


def require_provenance(fields: dict[str, object]) -> None:
    """Raise unless every required provenance field is present and non-empty."""
    missing = [k for k in REQUIRED_FIELDS if fields.get(k) in (None, "")]
    if missing:
        raise ProvenanceError(
            f"materialization lacks provenance field(s) {missing}; refusing to record it"
        )
