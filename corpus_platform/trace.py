"""Document lineage: every decision the pipeline made about one row, read from its shard only."""

from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.hashing import shard_of
from corpus_platform.base.names import SPLITS
from corpus_platform.base.redact import redact
from corpus_platform.base.shards import part_path, read_parquet
from corpus_platform.config import CorpusConfig, load_config
from corpus_platform.kernels.filtering.filters import judge_text
from corpus_platform.store.datasets import stage_path
from corpus_platform.store.registry import RAW_INPUT, list_snapshots
from corpus_platform.store.snapshots import current_snapshot


class TraceError(CorpusError):
    """A doc_id the pipeline never saw, or stages not built yet."""


def _row(folder: Path, shard: int, doc_id: str) -> dict[str, Any] | None:
    path = part_path(folder, shard)
    if not path.exists():  # a file, or a shard folder of raw-batch files
        return None
    table = read_parquet(path)
    found = table.filter(pc.equal(table.column("doc_id"), doc_id))
    return found.to_pylist()[0] if len(found) else None


def _split_row(folder: Path, shard: int, doc_id: str) -> tuple[str, dict[str, Any]] | None:
    for name in (*SPLITS, "dropped"):
        row = _row(folder / name, shard, doc_id)
        if row is not None:
            return name, row
    return None


def arrival(root: Path, raw_file: str) -> str:
    """The batch a row arrived in: its raw file, first read by which published raw_documents
    snapshot (the registry's oldest whose files include it) from which raw snapshot."""
    for record in list_snapshots(root, "raw_documents"):
        if raw_file in (record.get("counts") or {}).get("rows_per_file", {}):
            raw = record.get("upstream_snapshots", {}).get(RAW_INPUT, "unknown")
            return (
                f"arrived in batch {raw_file}: first published in raw_documents "
                f"{record['snapshot_id']} (raw snapshot {raw})"
            )
    return f"arrived in batch {raw_file}: no published raw_documents snapshot has read it yet"


class Trace:
    """Collects the report lines of one document."""

    def __init__(self, root: Path, config: CorpusConfig, doc_id: str) -> None:
        self.root, self.config, self.doc_id = root, config, doc_id
        self.shard = shard_of(doc_id, config.num_shards)
        self.lines = [f"doc_id {doc_id} (logical shard {self.shard} of {config.num_shards})"]

    def stage(self, asset: str, text: str) -> None:
        snapshot = current_snapshot(self.root, stage_path(self.root, asset)) or "not pinned"
        self.lines.append(f"{asset} [{snapshot}]: {text}")

    def detail(self, text: str) -> None:
        self.lines.append(f"    {text}")

    def raw(self) -> dict[str, Any]:
        row = _row(stage_path(self.root, "raw_documents"), self.shard, self.doc_id)
        if row is None:
            raise TraceError(
                f"doc_id {self.doc_id!r} is not in raw_documents (shard {self.shard}); "
                "check the id or materialize raw_documents"
            )
        self.stage("raw_documents", f"{row['raw_file']} row {row['raw_row']}")
        self.detail(arrival(self.root, row["raw_file"]))
        when = row["timestamp"].isoformat() if row["timestamp"] else "none"
        self.detail(f"source {row['source']}, entity {row['entity']}, timestamp {when}")
        self.detail(f"content hash {row['content_hash']}")
        return row

    def filtered(self, raw: dict[str, Any]) -> bool:
        folder = stage_path(self.root, "filtered_documents")
        removed = _row(folder / "removed", self.shard, self.doc_id)
        if removed is not None:
            self.stage(
                "filtered_documents",
                f"REMOVED by {removed['reason']} (score {removed['score']:g}, threshold "
                f"{removed['threshold']:g}); failed: {', '.join(removed['failed_filters'])}",
            )
        else:
            self.stage("filtered_documents", "kept")
        kept = _row(folder, self.shard, self.doc_id)
        edits = (kept or removed or {}).get("replacements") or []
        self.detail(f"replacements: {', '.join(edits) or 'none'}")
        verdicts = judge_text(raw["text"], self.config.filters, raw["source"], raw.get("url"))
        for v in verdicts:
            self.detail(
                f"{'pass' if v.passed else 'FAIL'} {v.name}: score {v.score:g}, "
                f"threshold {v.threshold:g}"
            )
        if not verdicts:
            self.detail("no text: text filters skipped")
        return removed is None

    def deduplicated(self) -> bool:
        folder = stage_path(self.root, "deduplicated_documents")
        member = _row(folder / "clusters", self.shard, self.doc_id)
        kept = _row(folder, self.shard, self.doc_id) is not None
        if member is None:
            self.stage("deduplicated_documents", "kept: no duplicate found")
        elif kept:
            role = (
                "representative"
                if member["representative"] == self.doc_id
                else "member (annotate mode)"
            )
            self.stage(
                "deduplicated_documents",
                f"kept as {role} of cluster {member['cluster_id']} "
                f"(quality score {member['quality_score']:.3f})",
            )
        else:
            self.stage(
                "deduplicated_documents",
                f"DROPPED: duplicate in cluster {member['cluster_id']} (kept row "
                f"{member['representative']}, estimated similarity {member['similarity']:.3f}, "
                f"quality score {member['quality_score']:.3f})",
            )
        return kept

    def split(self) -> str | None:
        found = _split_row(stage_path(self.root, "split_documents"), self.shard, self.doc_id)
        if found is None:
            self.stage("split_documents", "not found (stage not built?)")
            return None
        name, row = found
        where = f"DROPPED ({row['reason']})" if name == "dropped" else name
        self.stage(
            "split_documents", f"{where}; bucket {row['bucket']}, component {row['component']}"
        )
        for feature in self.config.asof_features:
            self.detail(
                f"as-of {feature.name} = {row[feature.name]} ({feature.agg} of "
                f"{feature.column} over entity {row['entity']}'s rows in the "
                f"{feature.window_days:g} days strictly before)"
            )
        return None if name == "dropped" else name

    def normalized(self, split: str) -> None:
        row = _row(stage_path(self.root, "normalized_splits") / split, self.shard, self.doc_id)
        values = ", ".join(
            f"{f} {row[f]:.4f}" for f in self.config.feature_columns if row and row[f] is not None
        )
        self.stage("normalized_splits", f"{split}: {values or 'no numeric features'}")

    def mixed(self) -> None:
        folder = stage_path(self.root, "training_mix")
        contaminated = _row(folder / "contaminated", self.shard, self.doc_id)
        row = _row(folder, self.shard, self.doc_id)
        if contaminated is not None:
            self.stage(
                "training_mix",
                f"REMOVED: shares an n-gram with {', '.join(contaminated['eval_sets'])}",
            )
        else:
            self.stage("training_mix", f"drawn {row['times_drawn'] if row else 0} time(s)")


def explain(root: Path, doc_id: str, config_file: str = "corpus.yaml") -> str:
    """Whether the filters kept a row and, if not, which filter removed it (``corpus explain``)."""
    t = Trace(root, load_config(root / config_file), doc_id)
    t.filtered(t.raw())
    return "\n".join(redact(t.lines))


def trace(root: Path, doc_id: str, config_file: str = "corpus.yaml") -> str:
    """The full path of one row through the pipeline, as printed by ``corpus trace``."""
    config = load_config(root / config_file)
    t = Trace(root, config, doc_id)
    raw = t.raw()
    if t.filtered(raw) and t.deduplicated():
        split = t.split()
        if split is not None:
            t.normalized(split)
            if split == "train":
                t.mixed()
            else:
                t.stage("training_mix", f"not eligible ({split} rows never enter the mix)")
    return "\n".join(redact(t.lines))
