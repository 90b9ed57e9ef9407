"""A small synthetic training mix and its shards, written without Dagster (fast)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from corpus_platform.base.hashing import shard_of
from corpus_platform.base.names import SHARDS_MANIFEST
from corpus_platform.base.shards import part_path, write_json, write_parquet
from corpus_platform.engine import Engine, LocalEngine
from corpus_platform.kernels.sharding.shards import build_shards

WORDS = tuple(
    [
        "the",
        "of",
        "and",
        "to",
        "in",
        "data",
        "model",
        "shard",
        "sample",
        "train",
        "token",
        "loader",
        "order",
        "seed",
    ]
)


def mix_rows(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` mix rows: texts of 5 to 300 words, ``times_drawn`` 1 (most), 2 or 3, one row with
    an unsafe doc_id (dots, a slash, a space) and one without text."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(5, 300))]
        rows.append(
            {
                "doc_id": f"doc-{i:05d}",
                "text": " ".join(words) + ("\n" if i % 7 == 0 else ""),
                "source": ("web", "wiki", "code")[i % 3],
                "entity": f"author-{i % 17}",
                "timestamp": datetime(2024, 1, 1, tzinfo=UTC) + timedelta(hours=i),
                "clicks": float("nan") if i % 11 == 0 else float(i),
                "times_drawn": 3 if i % 10 == 0 else 2 if i % 4 == 0 else 1,
            }
        )
    rows[1]["doc_id"] = "site.example/page 1.html"
    rows[2]["text"] = None
    return rows


def write_mix(folder: Path, rows: list[dict[str, Any]], num_shards: int) -> Path:
    """Rows as a mix folder of ``num_shards`` logical shards (by doc_id, as the pipeline)."""
    schema = pa.schema(
        [
            ("doc_id", pa.string()),
            ("text", pa.string()),
            ("source", pa.string()),
            ("entity", pa.string()),
            ("timestamp", pa.timestamp("us", tz="UTC")),
            ("clicks", pa.float64()),
            ("times_drawn", pa.int32()),
        ]
    )
    for shard in range(num_shards):
        mine = [r for r in rows if shard_of(r["doc_id"], num_shards) == shard]
        write_parquet(pa.Table.from_pylist(mine, schema), part_path(folder, shard))
    return folder


def make_shards(
    root: Path,
    rows: list[dict[str, Any]] | None = None,
    num_shards: int = 4,
    seed: int = 7,
    max_bytes: int = 10**9,
    max_samples: int | None = 64,
    engine: Engine | None = None,
) -> Path:
    """A training_shards folder under ``root`` built from a synthetic mix; returns it."""
    mix = write_mix(root / "mix", mix_rows(300) if rows is None else rows, num_shards)
    out, scratch = root / "training_shards", root / "scratch"
    out.mkdir(parents=True)
    scratch.mkdir()
    document = build_shards(
        mix, out, scratch, num_shards, seed, max_bytes, max_samples, engine or LocalEngine(1)
    )
    write_json(document, out / SHARDS_MANIFEST)
    return out


def rows_table(n: int, entities: int) -> pa.Table:
    """``n`` rows of ``entities`` entities, two sources and one feature, each its own cluster."""
    return pa.table(
        {
            "doc_id": [f"d{i:05d}" for i in range(n)],
            "entity": [f"e{i % entities}" for i in range(n)],
            "source": ["web" if i % 3 else "code" for i in range(n)],
            "x": [float(i % 17) for i in range(n)],
            "cluster_id": [f"d{i:05d}" for i in range(n)],
        }
    )
