"""The sample corpus mixed in tokens with a temperature, through the whole Dagster graph.

Targets are computed here, independently of the platform's kernels: tokens counted with the
``tokenizers`` library itself on the train split minus the rows decontamination dropped, shares
``n_i ** (1/T)``.
"""

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from corpus_platform.audit import input_targets
from corpus_platform.base.generations import generation_path
from corpus_platform.base.names import (
    SHARDS_MANIFEST,
    SPLIT_DOCUMENTS,
    STAGES,
    TRAIN,
    TRAINING_MIX,
    TRAINING_SHARDS,
)
from corpus_platform.base.shards import (
    part_path,
    read_json,
    read_manifest,
    read_parquet,
    write_parquet,
)
from corpus_platform.defs.mixing.checks import eval_ngrams, mix_proportions_within_tolerance
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.stages import check_on_published
from corpus_platform.runner import BuildReport
from corpus_platform.store.registry import chain, find_snapshot
from corpus_platform.store.snapshots import current_snapshot
from tests.conftest import build, make_project, set_config, tree_digest

TEMPERATURE = 2.0
TOLERANCE = 0.02
MIX = {
    "unit": "tokens",
    "tokenizer": "tokenizer.json",
    "temperature": TEMPERATURE,
    "proportions": {},
    "tolerance": TOLERANCE,
}
NUM_SHARDS = 8


def write_tokenizer(path: Path) -> None:
    """A small BPE tokenizer trained on a few sentences: words it never saw split into pieces."""
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["[UNK]"], show_progress=False)
    tokenizer.train_from_iterator(
        [
            "the training mix draws rows from the train split of every source",
            "def tokens(text): return len(text.split()) if text else 0",
            "an encyclopedia article describes the history of a city and its people",
        ],
        trainer,
    )
    tokenizer.save(str(path))


@pytest.fixture(scope="module")
def token_builds(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Path, BuildReport]]:
    """The sample built twice with the token mix: with engine.workers 1 and 2."""
    tokenizer = tmp_path_factory.mktemp("tokenizer") / "tokenizer.json"
    write_tokenizer(tokenizer)
    builds = {}
    for workers in (1, 2):
        root = make_project(
            tmp_path_factory.mktemp(f"tokens{workers}") / "project",
            mix=MIX,
            engine={"kind": "local", "workers": workers},
        )
        shutil.copy(tokenizer, root / "tokenizer.json")
        builds[workers] = (root, build(root))
    return builds


def token_counts(
    root: Path, folder: Path, skip: set[str] = frozenset(), texts: Path | None = None
) -> dict[str, list]:
    """Per row (doc_id order within shards): source, tokens by the tokenizer file, and the
    row's times_drawn and tokens columns when present. ``texts``: the folder holding the rows'
    texts, by doc id, when ``folder`` stores none (the mix: the split's train rows)."""
    tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
    rows: dict[str, list] = {"source": [], "tokens": [], "times_drawn": [], "column": []}
    text_of = {}
    for shard in range(NUM_SHARDS) if texts is not None else ():
        table = read_parquet(part_path(texts, shard), ["doc_id", "text"])
        text_of.update(zip(table["doc_id"].to_pylist(), table["text"].to_pylist(), strict=True))
    for shard in range(NUM_SHARDS):
        table = read_parquet(part_path(folder, shard))
        for row in table.to_pylist():
            if row["doc_id"] in skip:
                continue
            text = row["text"] if texts is None else text_of[row["doc_id"]]
            rows["source"].append(row["source"])
            rows["tokens"].append(len(tokenizer.encode(text, add_special_tokens=False).ids))
            rows["times_drawn"].append(row.get("times_drawn", 1))
            rows["column"].append(row.get("tokens"))
    return rows


def by_source(rows: dict[str, list], weight: str) -> dict[str, int]:
    total: dict[str, int] = {}
    for source, tokens, times in zip(
        rows["source"], rows["tokens"], rows["times_drawn"], strict=True
    ):
        total[source] = total.get(source, 0) + tokens * (times if weight == "drawn" else 1)
    return dict(sorted(total.items()))


def test_token_shares_follow_the_temperature_targets(token_builds) -> None:
    root, report = token_builds[1]
    assert report.ok, report.render()
    data = root / "data"
    contaminated = {
        d
        for shard in range(NUM_SHARDS)
        for d in read_parquet(part_path(data / TRAINING_MIX / "contaminated", shard), ["doc_id"])
        .column(0)
        .to_pylist()
    }
    assert contaminated  # the sample plants benchmark passages; they are not available
    available = by_source(  # normalized_splits' train rows, whose text the split keeps
        token_counts(root, data / SPLIT_DOCUMENTS / TRAIN, contaminated), "available"
    )
    weights = {s: n ** (1 / TEMPERATURE) for s, n in available.items()}
    target = {s: w / sum(weights.values()) for s, w in weights.items()}
    natural = {s: n / sum(available.values()) for s, n in available.items()}
    # T matters here: a mix at the natural shares would miss these targets by more than TOLERANCE
    assert max(abs(target[s] - natural[s]) for s in target) > 2 * TOLERANCE

    mix = token_counts(root, data / TRAINING_MIX, texts=data / SPLIT_DOCUMENTS / TRAIN)
    assert mix["column"] == mix["tokens"]  # the stage's tokens column is the tokenizer's count
    drawn = by_source(mix, "drawn")
    achieved = {s: n / sum(drawn.values()) for s, n in drawn.items()}
    assert set(achieved) == set(target)
    assert all(abs(achieved[s] - target[s]) <= TOLERANCE for s in target), (achieved, target)

    manifest = read_manifest(data / TRAINING_MIX)
    assert manifest["unit"] == "tokens" and manifest["tokenizer"] == "tokenizer.json"
    assert manifest["available_tokens_per_source"] == available
    assert manifest["drawn_tokens_per_source"] == drawn
    assert manifest["tokens"] == sum(drawn.values())
    # the shards count tokens in the mix's unit too: every sample's tokenizer tokens
    shards = read_json(data / TRAINING_SHARDS / SHARDS_MANIFEST)
    assert shards["tokens_counted_with"] == "tokenizer.json"
    assert shards["totals"]["tokens"] == sum(drawn.values())
    assert report.check("shards_match_manifest").passed  # its recount uses the tokenizer too
    # the largest mix without repeats: the smallest weighted source is drawn exactly once
    smallest = min(available, key=lambda s: available[s] / target[s])
    assert manifest["rates"][smallest] == 1.0 and drawn[smallest] == available[smallest]

    meta = report.materialized[TRAINING_MIX]
    assert meta["mix_unit"] == "tokens"
    assert meta["mix_chart"].startswith("![training mix by source (tokens)](data:image/png;base64,")
    epochs = meta["mix_epochs"]
    for source in target:
        line = next(x for x in epochs.splitlines() if x.startswith(f"| {source} |"))
        assert f"| {available[source]:,} | {drawn[source]:,} |" in line
        assert f"| {drawn[source] / available[source]:.3f} |" in line
    assert meta["upstream_snapshots"]["tokenizer"]  # pinned with the mix, like eval sets
    verdict = report.check("mix_proportions_within_tolerance").verdict
    assert verdict.startswith("largest deviation from target shares (tokens) ")
    assert verdict.endswith("rows whose tokens column disagrees with a recount: 0")


def test_outputs_are_byte_identical_with_one_and_two_workers(token_builds) -> None:
    (one, first), (two, second) = token_builds[1], token_builds[2]
    assert first.ok and second.ok, second.render()
    for stage in STAGES:
        assert first.materialized[stage]["snapshot_id"] == second.materialized[stage]["snapshot_id"]
        assert tree_digest(one / "data" / stage) == tree_digest(two / "data" / stage), stage


def rewrite(folder: Path, change) -> None:
    """Apply ``change`` (table -> table) to every shard of a published folder."""
    for shard in range(NUM_SHARDS):
        path = generation_path(folder, shard, 0)
        table = change(read_parquet(path))
        path.unlink()  # published files are links to DVC's cache: never write through them
        write_parquet(table, path)


def test_a_wrong_mix_fails_the_check(token_builds, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(token_builds[1][0], root)
    corpus = CorpusProject(root=str(root))
    honest = check_on_published(mix_proportions_within_tolerance, corpus)
    assert honest.passed, honest.metadata

    def lie_about_tokens(table: pa.Table) -> pa.Table:
        at = table.schema.get_field_index("tokens")
        return table.set_column(at, "tokens", pa.array([1] * len(table), pa.int64()))

    rewrite(root / "data" / TRAINING_MIX, lie_about_tokens)
    lied = check_on_published(mix_proportions_within_tolerance, corpus)
    assert not lied.passed
    assert "disagrees with a recount: 0" not in lied.metadata()["verdict"]

    shutil.rmtree(root)
    shutil.copytree(token_builds[1][0], root)

    def triple_the_largest_source(table: pa.Table) -> pa.Table:
        at = table.schema.get_field_index("times_drawn")
        times = [
            n * 3 if s == "web" else n
            for s, n in zip(
                table["source"].to_pylist(), table["times_drawn"].to_pylist(), strict=True
            )
        ]
        return table.set_column(at, "times_drawn", pa.array(times, pa.int32()))

    rewrite(root / "data" / TRAINING_MIX, triple_the_largest_source)
    skewed = check_on_published(mix_proportions_within_tolerance, corpus)
    assert not skewed.passed
    assert skewed.metadata()["verdict"].endswith("disagrees with a recount: 0")


def test_a_missing_tokenizer_file_stops_the_mix_naming_it(token_builds, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(token_builds[1][0], root)
    before = tree_digest(root / "data" / TRAINING_MIX)
    set_config(root, mix={"tokenizer": "models/missing.json"})
    report = build(root, [TRAINING_MIX])
    assert not report.ok and TRAINING_MIX not in report.materialized
    assert any(
        f"mix.tokenizer: {root.resolve() / 'models' / 'missing.json'}: tokenizer file not found"
        in failure
        for failure in report.failures
    ), report.failures
    assert tree_digest(root / "data" / TRAINING_MIX) == before


def test_the_tokenizer_is_a_pinned_input_that_replay_restores(token_builds) -> None:
    root, report = token_builds[1]
    entry = find_snapshot(root, report.materialized[TRAINING_MIX]["snapshot_id"])
    pinned = entry["upstream_snapshots"]["tokenizer"]
    assert pinned == current_snapshot(root, root / "tokenizer.json")
    targets = dict(input_targets(root, chain(root, entry)))
    assert targets[root / "tokenizer.json"] == pinned  # checkout --with-upstream and replay


def test_decontamination_uses_the_projects_normalization(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    set_config(root, dedup={"normalization": {"tokens": "whitespace", "punctuation": True}})
    corpus = CorpusProject(root=str(root))
    loaded = eval_ngrams(corpus, corpus.load())
    assert loaded.normalization.tokens == "whitespace" and loaded.normalization.punctuation
