"""The generations of a training_shards folder, as the loader reads them.

An append adds a generation of shards to ``manifest.json`` and never changes a published shard;
the loader reads the generations one after the other (:class:`~corpus_platform.loader.order.
GenerationalOrder`) and a saved state records each generation's fingerprint, so it resumes on
the same shards or on the same shards plus later generations.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from corpus_platform.base.names import PARQUET, SHARDS_MANIFEST


@dataclass(frozen=True)
class Generation:
    """One generation of a training_shards folder: the manifest entries of its Parquet shards,
    in shard order (shards never change once written; an append adds a generation)."""

    number: int
    entries: tuple[dict[str, Any], ...]

    @property
    def samples(self) -> int:
        """Samples in the generation."""
        return sum(int(e["samples"]) for e in self.entries)

    def fingerprint(self) -> dict[str, Any]:
        """What a state records of the generation: its number, samples, and the MD5 of its
        Parquet entries (name, samples, bytes, md5 of each, in shard order)."""
        listed = [
            [e["name"], int(e["samples"]), int(e["bytes"]), e.get("md5")] for e in self.entries
        ]
        text = json.dumps(listed, separators=(",", ":"))
        md5 = hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()
        return {"generation": self.number, "samples": self.samples, "md5": md5}


def manifest_generations(document: dict[str, Any]) -> tuple[Generation, ...]:
    """The generations of a training_shards manifest, in its order, with their Parquet entries.

    A manifest written before appends (no ``generations``) is one generation 0 of every shard.

    Raises:
        ValueError: when a generation lists a shard without a Parquet entry, a shard is in two
            generations, or a Parquet shard is in none.
    """
    parquet = {int(e["shard"]): e for e in document["shards"] if e["format"] == PARQUET}
    listed = document.get("generations")
    if listed is None:
        listed = [{"generation": 0, "shards": sorted(parquet)}]
    generations: list[Generation] = []
    placed: set[int] = set()
    for entry in listed:
        numbers = sorted(int(s) for s in entry["shards"])
        twice = {s for s, t in pairwise(numbers) if s == t}
        wrong = sorted({s for s in numbers if s not in parquet or s in placed} | twice)
        if wrong:
            raise ValueError(
                f"{SHARDS_MANIFEST}: generation {entry['generation']} lists shards {wrong} that "
                "have no Parquet entry or are listed twice"
            )
        placed.update(numbers)
        generations.append(Generation(int(entry["generation"]), tuple(parquet[s] for s in numbers)))
    if unplaced := sorted(set(parquet) - placed):
        raise ValueError(f"{SHARDS_MANIFEST}: Parquet shards {unplaced} are in no generation")
    return tuple(generations)


def fingerprint_key(fingerprint: dict[str, Any]) -> tuple[Any, ...]:
    return fingerprint.get("generation"), fingerprint.get("samples"), fingerprint.get("md5")


def describe_fingerprint(key: Sequence[Any]) -> str:
    generation, samples, md5 = key
    return f"generation {generation} of {samples} samples, md5 {md5}"
