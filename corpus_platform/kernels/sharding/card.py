"""The dataset card of a build: a Hugging Face dataset card (YAML header, markdown body) with the
datasheet sections of Gebru et al. (motivation, composition, collection, preprocessing, uses,
distribution, maintenance), filled from the build's own records, and its charts.

Everything here is a pure function of :class:`CardFacts`: the card holds no clock time, run id,
code version, config hash (the engine settings are part of it, and they never change data) or
path of the machine that wrote it, so equal builds write byte-identical cards on any engine (and
a replay on newer code that writes the same data writes the same card).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from corpus_platform.base.charts import pyplot
from corpus_platform.base.names import (
    DEDUPLICATED_DOCUMENTS,
    FILTERED_DOCUMENTS,
    RAW_DOCUMENTS,
    SPLIT_DOCUMENTS,
    TRAINING_MIX,
)

CHART_DIR = "card"  # beside README.md: the card's images
PARQUET_GLOB = "*.parquet"  # the Parquet shards, beside the card
CARD_FILE = "README.md"

SPLIT_PROMISES = {
    "group": "rows sharing an entity, a duplicate cluster or a similar pair (Jaccard at or above "
    "split.similarity_threshold) are on one side; split by a seeded hash of the component",
    "time": "every validation row is later than every train row, every test row later than "
    "every validation row (by timestamp, then doc id); rows within split.gap_days of the next "
    "window are dropped",
    "time_group": "time windows as in time mode, and no entity, cluster or similar pair spans "
    "two splits",
    "row": "rows are split one by one by a seeded hash: entities and near-duplicates may leak "
    "(a demonstration mode; its checks fail)",
}


@dataclass(frozen=True)
class StageFacts:
    """One published stage of the build: snapshot id, counts and check verdicts."""

    asset: str
    snapshot_id: str
    counts: dict[str, Any]
    checks: dict[str, tuple[str, str]]  # check -> (result, verdict)


@dataclass(frozen=True)
class CardFacts:
    """What the card says, gathered from the registry (see ``defs.card``)."""

    name: str
    stages: tuple[StageFacts, ...]
    config: dict[str, Any]
    raw_snapshot: str
    shards: dict[str, Any] = field(default_factory=dict)  # the shards' manifest totals
    generations: tuple[dict[str, Any], ...] = ()  # the shards' generations, oldest first

    def stage(self, asset: str) -> StageFacts | None:
        """The facts of one stage, if it is in the build."""
        return next((s for s in self.stages if s.asset == asset), None)

    def counts(self, asset: str) -> dict[str, Any]:
        """The counts of one stage (empty if absent)."""
        found = self.stage(asset)
        return found.counts if found else {}


def licence_rows(facts: CardFacts) -> list[list[Any]]:
    """One row per licence: its rows in train, validation and test and its draws in the mix;
    empty when the build recorded no licences (``licenses`` / ``input.columns.license``)."""
    per_split = facts.counts(SPLIT_DOCUMENTS).get("rows_per_license") or {}
    drawn = facts.counts(TRAINING_MIX).get("drawn_per_license") or {}
    splits = list(per_split)
    names = sorted(set(drawn).union(*(set(v) for v in per_split.values())))
    return [[n, *(per_split[s].get(n, 0) for s in splits), drawn.get(n, 0)] for n in names]


def mix_licences(facts: CardFacts) -> list[str]:
    """The licences of the rows drawn into the mix (empty when none were recorded)."""
    drawn = facts.counts(TRAINING_MIX).get("drawn_per_license") or {}
    return sorted(licence for licence, n in drawn.items() if n)


def licences(facts: CardFacts) -> list[str]:
    """The card's licence section: rows per licence and split, draws per licence."""
    rows = licence_rows(facts)
    if not rows:
        return []
    splits = list(facts.counts(SPLIT_DOCUMENTS).get("rows_per_license") or {})
    deny = facts.config.get("licenses", {}).get("deny") or []
    return [
        "",
        "### Licences",
        "",
        "A row's licence is its `license` column where set, else its source's licence "
        "(`licenses.sources`), else `unknown`. Denied (`licenses.deny`, a blocking check on the "
        f"splits): {', '.join(f'`{d}`' for d in deny) or 'none'}.",
        "",
        *_table(
            ["licence", *splits, "mix draws"], [[r[0], *(f"{n:,}" for n in r[1:])] for r in rows]
        ),
    ]


def size_category(rows: int) -> str:
    """The Hugging Face ``size_categories`` tag of a number of rows."""
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")]
    bounds += [(1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M")]
    return next((tag for bound, tag in bounds if rows < bound), "n>100M")


def header(facts: CardFacts) -> str:
    """The card's YAML header (the Hugging Face dataset card metadata)."""
    rows = int(facts.counts(TRAINING_MIX).get("rows", 0))
    languages = facts.config.get("filters", {}).get("languages") or []
    drawn = mix_licences(facts)
    meta = {
        "pretty_name": facts.name,
        "language": list(languages),
        "license": drawn[0].lower() if len(drawn) == 1 and drawn[0] != "unknown" else "other",
        "size_categories": [size_category(rows)],
        "task_categories": ["text-generation"],
        "tags": ["corpus_platform", "deduplicated", "decontaminated", "leak-checked"],
        "configs": [
            {"config_name": "default", "data_files": [{"split": "train", "path": PARQUET_GLOB}]}
        ],
    }
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def _table(head: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return lines + ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]


def composition(facts: CardFacts) -> list[str]:
    """Sources, targets and what was drawn."""
    mix = facts.counts(TRAINING_MIX)
    targets = facts.config.get("mix", {}).get("proportions") or {}
    drawn = mix.get("drawn_per_source", {})
    total = sum(drawn.values()) or 1
    rows = [
        [
            source,
            f"{mix.get('available_per_source', {}).get(source, 0):,}",
            f"{drawn.get(source, 0):,}",
            f"{drawn.get(source, 0) / total:.1%}",
            f"{float(targets[source]):.1%}" if source in targets else "all of train",
            mix.get("rates", {}).get(source, "-"),
        ]
        for source in sorted(set(drawn) | set(mix.get("available_per_source", {})))
    ]
    lines = [
        f"The training mix holds **{mix.get('rows', 0):,} rows** drawn from the train split "
        "by source (a row drawn k times appears k times). Rows per source:",
        "",
        *_table(["source", "train rows", "drawn", "share", "target", "draw rate"], rows),
    ]
    if facts.shards:
        totals = ", ".join(f"{k} {_sorted(v)}" for k, v in sorted(facts.shards.items()))
        lines += ["", f"Shards: {totals}."]  # sorted: a rerun's totals come in another order
    return lines + generation_lines(facts) + licences(facts)


def _sorted(value: Any) -> Any:
    """A mapping with its keys sorted (at every depth); any other value as it is."""
    if isinstance(value, dict):
        return {k: _sorted(v) for k, v in sorted(value.items())}
    return value


def generation_lines(facts: CardFacts) -> list[str]:
    """The shards' generations (one per build that added data, read one after the other) and
    the raw batches behind each; nothing for a dataset of one generation."""
    if len(facts.generations) < 2:
        return []
    rows = [
        [
            str(g["generation"]),
            f"{g['shards'][0]}-{g['shards'][-1]}" if g["shards"] else "none",
            f"{g['samples']:,}",
            ", ".join(g.get("raw_batches", [])) or "-",
        ]
        for g in facts.generations
    ]
    return [
        "",
        "The dataset grew by appends: each generation's shards hold the samples of the raw "
        "batches behind it, and a reader goes through the generations in order.",
        "",
        *_table(["generation", "shards", "samples", "raw batches"], rows),
    ]


def preprocessing(facts: CardFacts) -> list[str]:
    """The filter funnel, deduplication, the split and the decontamination."""
    filtered, dedup = facts.counts(FILTERED_DOCUMENTS), facts.counts(DEDUPLICATED_DOCUMENTS)
    split, mix = facts.counts(SPLIT_DOCUMENTS), facts.counts(TRAINING_MIX)
    removed = filtered.get("removed_by_filter", {})
    funnel = [[name, f"{n:,}"] for name, n in sorted(removed.items(), key=lambda kv: -kv[1])]
    mode = split.get("mode", "")
    dedup_config = facts.config.get("dedup", {})
    lines = [
        "### Quality filters",
        "",
        f"{filtered.get('rows_in', 0):,} rows in, {filtered.get('rows', 0):,} kept. Rows "
        "removed, by the first filter each failed:",
        "",
        *_table(["filter", "rows removed"], funnel),
        "",
        f"![filter funnel]({CHART_DIR}/funnel.png)",
        "",
        "### Deduplication",
        "",
        f"Exact and MinHash near-duplicates (Jaccard of word {dedup_config.get('shingle_size')}"
        f"-grams at or above {dedup_config.get('threshold')}, each candidate "
        f"verified exactly): {dedup.get('duplicate_clusters', 0):,} clusters holding "
        f"{dedup.get('rows_in_clusters', 0):,} rows; {dedup.get('rows', 0):,} of "
        f"{dedup.get('rows_in', 0):,} rows kept (one per cluster, by "
        f"{dedup.get('representative_rule', 'quality')}).",
        "",
        "### Splits",
        "",
        f"Mode `{mode}`: {SPLIT_PROMISES.get(mode, mode)}. Sizes: "
        + ", ".join(f"{name} {n:,}" for name, n in split.get("split_sizes", {}).items())
        + ".",
        "",
        f"![split sizes]({CHART_DIR}/splits.png)",
        "",
        "### Statistics and decontamination",
        "",
        "Normalization statistics were fitted on the train split only and frozen for validation "
        "and test. Training rows sharing a word "
        f"{facts.config.get('decontamination', {}).get('ngram', 13)}-gram with an evaluation set: "
        f"{json.dumps(mix.get('contaminated_rows_per_eval_set', {}), sort_keys=True)} "
        f"(action: {mix.get('decontamination_action', 'flag')}).",
    ]
    return lines


def verdicts(facts: CardFacts) -> list[str]:
    """Every blocking check of every stage, with its verdict. A check that compares with the
    previous snapshot says so instead of its numbers, which depend on the project's history
    (a rebuild of the same data must write the same card)."""
    rows = [
        [
            stage.asset,
            name,
            result,
            verdict,
        ]
        for stage in facts.stages
        for name, (result, verdict) in sorted(stage.checks.items())
    ]
    return _table(["stage", "check", "result", "verdict"], rows)


def render_card(facts: CardFacts, loads: list[str]) -> str:
    """The whole card; ``loads`` are one-line ways to load the shards (shown under Uses)."""
    raw = facts.counts(RAW_DOCUMENTS)
    snapshots = [[s.asset, f"`{s.snapshot_id}`"] for s in facts.stages]
    mix_id = next((s.snapshot_id for s in facts.stages if s.asset == TRAINING_MIX), "")
    lines = [
        f"# {facts.name}",
        "",
        "## Motivation",
        "",
        "A training set for language models whose evaluation stays honest: no entity, duplicate "
        "cluster or near-duplicate pair on both sides of a split, statistics fitted on train "
        "only, no benchmark text in the training mix, every row traceable to its raw file. It "
        "was built by corpus_platform; every number below comes from the build's registry.",
        "",
        "## Composition",
        "",
        *composition(facts),
        "",
        f"![mix by source]({CHART_DIR}/mix.png)",
        "",
        "## Collection process",
        "",
        f"{raw.get('rows', 0):,} rows read from {raw.get('files', 0)} raw files (raw snapshot "
        f"`{facts.raw_snapshot}`):",
        "",
        *_table(["file", "rows"], [[f, f"{n:,}"] for f, n in raw.get("rows_per_file", {}).items()]),
        "",
        "## Preprocessing",
        "",
        *preprocessing(facts),
        "",
        "### Check verdicts",
        "",
        *verdicts(facts),
        "",
        "## Uses",
        "",
        "Pre-training or fine-tuning a language model. The validation and test splits are not in "
        "this mix; evaluate on them, or on the configured evaluation sets, never on these rows. "
        "Loading the shards:",
        "",
        "```python",
        *loads,
        "```",
        "",
        "## Distribution",
        "",
        "Every stage is pinned with DVC; `corpus checkout <snapshot> --with-upstream` restores "
        f"one and `corpus replay {mix_id}` rebuilds the mix bit for bit and compares.",
        "",
        *_table(["stage", "snapshot id"], snapshots),
        "",
        f"The config, code version and environment of each snapshot: `corpus lineage {mix_id}`.",
        "",
        "## Maintenance",
        "",
        "Rebuilt by the nightly schedule and on new raw files; every build appends to "
        "`.corpus/registry.jsonl` (`corpus snapshots`, `corpus lineage <snapshot>`). A build "
        "whose checks fail publishes nothing and leaves this card as it was.",
        "",
    ]
    return header(facts) + "\n" + "\n".join(lines)


def _save(figure: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, format="png", metadata={"Software": None})


def write_charts(facts: CardFacts, folder: Path) -> list[Path]:
    """The card's images under ``folder/card/``: the filter funnel, the split sizes and the mix
    by source (PNG without a software or time stamp)."""
    plt = pyplot()

    out = folder / CHART_DIR
    filtered, split = facts.counts(FILTERED_DOCUMENTS), facts.counts(SPLIT_DOCUMENTS)
    drawn = facts.counts(TRAINING_MIX).get("drawn_per_source", {})
    written = []
    removed = filtered.get("removed_by_filter", {})
    names = ["rows in", *sorted(removed, key=lambda n: (-removed[n], n)), "rows out"]
    values = [filtered.get("rows_in", 0), *(removed[n] for n in names[1:-1])]
    values.append(filtered.get("rows", 0))
    sizes = split.get("split_sizes", {})
    charts = [
        ("funnel.png", "filter funnel", names[::-1], values[::-1], "barh"),
        ("splits.png", "rows per split", list(sizes), list(sizes.values()), "bar"),
        ("mix.png", "training mix by source (draws)", list(drawn), list(drawn.values()), "pie"),
    ]
    for file, title, labels, numbers, kind in charts:
        figure, axis = plt.subplots(figsize=(6, 4), dpi=80)
        if kind == "pie":
            axis.pie(numbers, labels=labels, autopct="%1.1f%%", startangle=90, counterclock=False)
        elif kind == "barh":
            axis.bar_label(axis.barh(labels, numbers), padding=3)
        else:
            axis.bar_label(axis.bar(labels, numbers), padding=3)
        axis.set_title(title)
        _save(figure, out / file)
        plt.close(figure)
        written.append(out / file)
    return written


def card_for_ui(card: str, folder: Path) -> str:
    """The card's body for the Dagster UI: the YAML header dropped and each chart under
    ``folder`` inlined (the UI cannot resolve a path beside the shards)."""
    body = card.split("---\n", 2)[2] if card.startswith("---\n") else card
    for chart in sorted((folder / CHART_DIR).glob("*.png")):
        inline = base64.b64encode(chart.read_bytes()).decode()
        body = body.replace(f"]({CHART_DIR}/{chart.name})", f"](data:image/png;base64,{inline})")
    return body
