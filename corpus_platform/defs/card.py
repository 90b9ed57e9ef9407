"""The facts of a dataset card, read from the registry for the card kernel: the chain of
published snapshots a training mix was built from, their counts and the check verdicts that
admitted each (its first publication's: a rebuild that publishes the same bytes again writes the
same card)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corpus_platform.base.files import file_md5
from corpus_platform.base.names import TRAINING_MIX
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.sharding.card import (
    CARD_FILE,
    CHART_DIR,
    PARQUET_GLOB,
    CardFacts,
    StageFacts,
    card_for_ui,
    render_card,
    write_charts,
)
from corpus_platform.store.registry import (
    STATUS_LABELS,
    admitting_checks,
    chain,
    check_status,
    find_snapshot,
    raw_snapshot,
)
from corpus_platform.store.snapshots import current_snapshot

DEFAULT_NAME = "corpus_platform training mix"


def card_facts(
    root: Path,
    mix_snapshot: str,
    shards: dict[str, Any] | None = None,
    generations: list[dict[str, Any]] | None = None,
) -> CardFacts:
    """The facts of the card of the training mix ``mix_snapshot`` (and its ``shards`` totals
    and ``generations``).

    The card's name is the config's ``annotations.dataset_name`` when set."""
    entry = find_snapshot(root, mix_snapshot)
    records = chain(root, entry)
    stages = tuple(
        StageFacts(
            record["asset"],
            record["snapshot_id"],
            record.get("counts", {}),
            {
                name: (
                    _card_result(check),
                    str(check.get("card_verdict") or check.get("verdict", "")),
                )
                for name, check in admitting_checks(
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
        raw_snapshot=raw_snapshot(records),
        shards=dict(shards or {}),
        generations=tuple(generations or ()),
    )


def _card_result(check: dict[str, Any]) -> str:
    """The result the card shows for a published snapshot's check. A check whose verdict
    depends on earlier snapshots (it has a ``card_verdict``) shows ``ok`` whether it passed or
    had nothing to compare with (a first snapshot), so that rebuilding the same data writes the
    same card; every other check shows PASS, FAIL or n/a."""
    status = check_status(check)
    if check.get("card_verdict") and status != "failed":
        return "ok"
    return STATUS_LABELS[status]


def load_lines(folder: str) -> list[str]:
    """One-line loads of the Parquet shards in ``folder`` with datasets, pandas and DuckDB."""
    files = f"{folder}/{PARQUET_GLOB}" if folder else PARQUET_GLOB
    return [
        "import glob, datasets, duckdb, pandas",
        f'ds = datasets.load_dataset("parquet", data_files="{files}", split="train")',
        f'df = pandas.read_parquet(sorted(glob.glob("{files}")))',
        f"rel = duckdb.sql(\"SELECT source, count(*) AS samples FROM '{files}' GROUP BY source\")",
    ]


def write_dataset_card(
    corpus: CorpusProject,
    folder: Path,
    shards: dict[str, Any],
    generations: list[dict[str, Any]] | None = None,
) -> str:
    """Write the card of the published training mix (``README.md`` and its charts) into the
    shards' candidate ``folder``, with the shards' totals and generations; return its body for
    the UI."""
    root = corpus.root_path
    mix = current_snapshot(root, corpus.stage_dir(TRAINING_MIX))
    if mix is None:
        raise FileNotFoundError(f"{corpus.stage_dir(TRAINING_MIX)}: no published training mix")
    facts = card_facts(root, mix, shards, generations)
    card = render_card(facts, load_lines(""))
    (folder / CARD_FILE).write_text(card, encoding="utf-8")
    write_charts(facts, folder)
    return card_for_ui(card, folder)


def card_entries(folder: Path) -> list[dict[str, Any]]:
    """The card's files in ``folder`` as manifest entries (name, bytes, md5), sorted."""
    files = [folder / CARD_FILE, *sorted((folder / CHART_DIR).glob("*.png"))]
    return [
        {"name": p.relative_to(folder).as_posix(), "bytes": p.stat().st_size, "md5": file_md5(p)}
        for p in files
    ]
