"""The facts of a dataset card, read from the registry for the card kernel: the chain of
published snapshots a training mix was built from, their counts and every check verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corpus_platform.kernels.card import CardFacts, StageFacts
from corpus_platform.store.registry import chain, find_snapshot, latest_checks, raw_snapshot

DEFAULT_NAME = "corpus_platform training mix"


def card_facts(root: Path, mix_snapshot: str, shards: dict[str, Any] | None = None) -> CardFacts:
    """The facts of the card of the training mix ``mix_snapshot`` (and its ``shards`` totals).

    The card's name is the config's ``annotations.dataset_name`` when set."""
    entry = find_snapshot(root, mix_snapshot)
    records = chain(root, entry)
    stages = tuple(
        StageFacts(
            record["asset"],
            record["snapshot_id"],
            record.get("counts", {}),
            {
                name: (bool(check["passed"]), str(check.get("verdict", "")))
                for name, check in latest_checks(
                    root, record["asset"], record["snapshot_id"]
                ).items()
            },
        )
        for record in records
    )
    config = entry.get("config", {})
    return CardFacts(
        name=config.get("annotations", {}).get("dataset_name", DEFAULT_NAME),
        stages=stages,
        config=config,
        config_hash=entry["config_hash"],
        raw_snapshot=raw_snapshot(records),
        shards=dict(shards or {}),
    )
