"""A small synthetic training mix and its shards, written without Dagster (fast)."""

from __future__ import annotations

import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from corpus_platform.base.generations import generation_path
from corpus_platform.base.hashing import shard_of
from corpus_platform.base.names import SHARDS_MANIFEST, WEBDATASET
from corpus_platform.base.shards import part_path, read_json, write_json, write_parquet
from corpus_platform.engine import Engine, LocalEngine
from corpus_platform.kernels.sharding.manifest import extend_manifest
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


def mix_rows(n: int, seed: int = 0, first: int = 0) -> list[dict[str, Any]]:
    """``n`` mix rows: texts of 5 to 300 words, ``times_drawn`` 1 (most), 2 or 3, one row with
    an unsafe doc_id (dots, a slash, a space) and one without text. Rows are numbered from
    ``first`` (doc_ids ``doc-<number>``): rows for an append take the numbers after the old."""
    rng = random.Random(seed)
    rows = []
    for i in range(first, first + n):
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
    rows[1]["doc_id"] = f"site.example/page {first + 1}.html"
    rows[2]["text"] = None
    return rows


def write_mix(
    folder: Path, rows: list[dict[str, Any]], num_shards: int, generation: int | None = None
) -> Path:
    """Rows as a mix folder of ``num_shards`` logical shards (by doc_id, as the pipeline): one
    file per shard, or with ``generation`` that generation's file inside each shard's folder
    (``part-0000N.parquet/g0000G.parquet``)."""
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
        path = part_path(folder, shard)
        if generation is not None:
            path = generation_path(folder, shard, generation)
        write_parquet(pa.Table.from_pylist(mine, schema), path)
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


def append_generation(
    root: Path,
    rows: list[dict[str, Any]],
    generation: int,
    num_shards: int = 4,
    max_bytes: int = 10**9,
    max_samples: int | None = 64,
    engine: Engine | None = None,
) -> dict[str, Any]:
    """Append ``rows`` as generation ``generation`` (>= 1) to the shards of :func:`make_generations`
    under ``root``: write them as that generation's mix files, shard them alone into new shard
    files numbered after the published ones (in an empty scratch folder of their own), and
    extend the manifest, as the shards stage of an append does. Returns the new manifest."""
    mix, out = root / "mix", root / "training_shards"
    write_mix(mix, rows, num_shards, generation)
    previous = read_json(out / SHARDS_MANIFEST)
    scratch = root / f"scratch-g{generation:05d}"
    scratch.mkdir()
    added = build_shards(
        mix,
        out,
        scratch,
        num_shards,
        previous["seed"],
        max_bytes,
        max_samples,
        engine or LocalEngine(1),
        generation=generation,
        first_shard=previous["totals"]["shards"],  # generation 0's tar shards, and so on
        mix_generations=(generation,),
    )
    document = extend_manifest(previous, added)
    write_json(document, out / SHARDS_MANIFEST)
    return document


def make_generations(
    root: Path,
    rows: list[dict[str, Any]] | None = None,
    appended: list[dict[str, Any]] | None = None,
    num_shards: int = 4,
    seed: int = 7,
    max_samples: int | None = 64,
) -> tuple[Path, Path]:
    """A training_shards folder of two generations under ``root``, built with the real kernel:
    generation 0 from ``rows`` (default 300 mix rows, 420 samples), then ``appended`` (default
    100 more rows numbered after them) appended as generation 1. Returns a copy of the folder
    as it was before the append (one generation) and the folder after it."""
    rows = mix_rows(300) if rows is None else rows
    appended = mix_rows(100, seed=1, first=len(rows)) if appended is None else appended
    mix, out, scratch = root / "mix", root / "training_shards", root / "scratch-g00000"
    write_mix(mix, rows, num_shards, generation=0)
    out.mkdir(parents=True)
    scratch.mkdir()
    engine = LocalEngine(1)
    document = build_shards(mix, out, scratch, num_shards, seed, 10**9, max_samples, engine)
    write_json(document, out / SHARDS_MANIFEST)
    before = shutil.copytree(out, root / "before-append")
    append_generation(root, appended, 1, num_shards, max_samples=max_samples, engine=engine)
    return before, out


def generation_files(folder: Path, generation: int, fmt: str = WEBDATASET) -> list[str]:
    """The names of one generation's shard files of format ``fmt`` in a training_shards folder,
    from its manifest."""
    document = read_json(folder / SHARDS_MANIFEST)
    numbers = {
        s for g in document["generations"] if g["generation"] == generation for s in g["shards"]
    }
    return [e["name"] for e in document["shards"] if e["shard"] in numbers and e["format"] == fmt]


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
