"""The manifest of training_shards: every file with its samples, tokens, bytes and MD5, the
generations (an append adds one) and the totals."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from corpus_platform.base.files import hashed_md5, remember
from corpus_platform.base.names import PARQUET, WEBDATASET

HASHED = "_hashed"  # not in the manifest: the identity of the file its MD5 was read from


def file_entry(path: Path, shard: int, fmt: str, samples: int, tokens: int) -> dict[str, Any]:
    """One file's manifest entry, with the identity of the file hashed under :data:`HASHED`
    (:func:`remember_hashed` takes it out)."""
    md5, hashed = hashed_md5(path)
    return {
        "name": path.name,
        "shard": shard,
        "format": fmt,
        "samples": samples,
        "tokens": tokens,
        "bytes": path.stat().st_size,
        "md5": md5,
        HASHED: hashed,
    }


def remember_hashed(entries: Sequence[dict[str, Any]]) -> None:
    """Take :data:`HASHED` out of each entry and remember its MD5 in this process
    (:func:`corpus_platform.base.files.remember`), so the pin of the shards hands DVC the MD5s
    the workers read instead of DVC reading the bytes again."""
    for entry in entries:
        if (hashed := entry.pop(HASHED, None)) is not None:
            remember(tuple(hashed), entry["md5"])


def manifest(
    entries: Sequence[dict[str, Any]],
    seed: int,
    max_bytes: int,
    max_samples: int | None,
    generations: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The shards' manifest: every file in shard order (tar, then Parquet), the generations
    (each with its shards, read one after the other) and the totals."""
    tars = [e for e in entries if e["format"] == WEBDATASET]
    if generations is None:
        generations = [generation_entry(0, tars)]
    return {
        "order": "samples sorted by xxh3('shards' 0x1f key, seed), ties by key, within each "
        "generation; generations one after the other",
        "seed": seed,
        "max_bytes": max_bytes,
        "max_samples": max_samples,
        "shards": list(entries),
        "generations": list(generations),
        "totals": {
            "shards": len(tars),
            "samples": sum(e["samples"] for e in tars),
            "tokens": sum(e["tokens"] for e in tars),
            "bytes": {
                fmt: sum(e["bytes"] for e in entries if e["format"] == fmt)
                for fmt in (WEBDATASET, PARQUET)
            },
        },
    }


def generation_entry(generation: int, tars: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A generation's entry in the manifest: its shards (numbers), samples and tokens."""
    return {
        "generation": generation,
        "shards": [e["shard"] for e in tars],
        "samples": sum(e["samples"] for e in tars),
        "tokens": sum(e["tokens"] for e in tars),
    }


def extend_manifest(previous: dict[str, Any], added: dict[str, Any]) -> dict[str, Any]:
    """The manifest of published shards (``previous``) and a new generation's (``added``, from
    :func:`build_shards`): every file, every generation, new totals; the rest as published."""
    entries = [*previous["shards"], *added["shards"]]
    generations = [*previous["generations"], *added["generations"]]
    extended = manifest(
        entries, previous["seed"], previous["max_bytes"], previous["max_samples"], generations
    )
    return {**previous, **extended}
