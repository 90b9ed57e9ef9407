"""Every leak check passes on honest data and fails on data with the leak planted.

Most cases copy the session's built project, plant one leak in the published files and call
the check directly; cases that need a different config re-materialize the affected assets.
"""

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from corpus_platform.base.generations import generation_path
from corpus_platform.base.names import SIMILAR_PAIRS
from corpus_platform.base.shards import part_path, read_parquet, write_parquet
from corpus_platform.defs.mixing.checks import (
    mix_proportions_within_tolerance,
    no_benchmark_ngram_overlap,
)
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.defs.splitting.checks import (
    asof_features_causal,
    no_cluster_in_two_splits,
    no_entity_in_two_splits,
    no_train_neighbour_of_held_out_rows,
    split_ratios_within_tolerance,
    temporal_order,
)
from corpus_platform.defs.stages import check_on_published
from corpus_platform.defs.statistics.checks import (
    fitted_on_exactly_train,
    normalized_with_frozen_train_statistics,
)
from corpus_platform.kernels.mixing.plan import MixPlan, plan_mix
from tests.conftest import build, set_config

SPLITS = ("train", "validation", "test")


def run_check(check: Callable[..., dg.AssetCheckResult], root: Path) -> dg.AssetCheckResult:
    return check_on_published(check, CorpusProject(root=str(root)))


def copy_project(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(source, target)
    return target


def locate(stage: Path, doc_id: str) -> tuple[str, Path]:
    for name in SPLITS:
        for path in sorted((stage / name).glob("part-*.parquet/*.parquet")):
            if doc_id in read_parquet(path, ["doc_id"]).column(0).to_pylist():
                return name, path
    raise AssertionError(f"{doc_id} not found")


def move_row(stage: Path, doc_id: str, to_split: str) -> None:
    """Move one row to another split folder (same shard file name)."""
    _, path = locate(stage, doc_id)
    table = read_parquet(path)
    is_row = pc.equal(table.column("doc_id"), doc_id)
    target = stage / to_split / path.parent.name / path.name
    moved = pa.concat_tables([read_parquet(target), table.filter(is_row)])
    write_parquet(table.filter(pc.invert(is_row)), path)
    write_parquet(moved.sort_by("doc_id"), target)


def verdict(result: dg.AssetCheckResult) -> str:
    return result.metadata()["verdict"]


def a_similar_pair(root: Path) -> tuple[str, str]:
    """A similar pair (a, b) with a in train and b present."""
    pairs = read_parquet(root / "data" / "deduplicated_documents" / SIMILAR_PAIRS)
    for a, b in zip(
        pairs.column("doc_a").to_pylist(), pairs.column("doc_b").to_pylist(), strict=True
    ):
        for first, second in ((a, b), (b, a)):
            try:
                if locate(root / "data" / "split_documents", first)[0] == "train":
                    locate(root / "data" / "split_documents", second)
                    return first, second
            except AssertionError:
                continue
    raise AssertionError("no usable similar pair in the sample")


def test_similar_pair_across_splits_fails_both_similarity_checks(built, tmp_path: Path) -> None:
    root = copy_project(built[0], tmp_path)
    assert run_check(no_cluster_in_two_splits, root).passed
    assert run_check(no_train_neighbour_of_held_out_rows, root).passed
    train_doc, other = a_similar_pair(root)
    move_row(root / "data" / "split_documents", other, "test")
    clusters = run_check(no_cluster_in_two_splits, root)
    assert not clusters.passed and "similar pairs in more than one split: 1 of" in verdict(clusters)
    neighbours = run_check(no_train_neighbour_of_held_out_rows, root)
    assert not neighbours.passed
    assert f"{other}~{train_doc}" in neighbours.metadata()["offenders"]
    reused = neighbours.metadata()["band_keys"]
    assert reused.startswith("band keys of deduplicated_documents ")
    assert reused.endswith("(0 rows sketched)")
    shutil.rmtree(root / ".corpus" / "cache" / "band-keys")  # a fresh clone has none
    afresh = run_check(no_train_neighbour_of_held_out_rows, root)
    assert afresh.metadata()["band_keys"] == "every split row sketched afresh"
    for field in ("verdict", "offenders", "candidate_pairs_verified"):
        assert afresh.metadata()[field] == neighbours.metadata()[field], field


def test_entity_check_names_offenders(built, tmp_path: Path) -> None:
    root = copy_project(built[0], tmp_path)
    stage = root / "data" / "split_documents"
    doc = read_parquet(part_path(stage / "train", 0), ["doc_id"]).column(0)[0].as_py()
    move_row(stage, doc, "validation")
    result = run_check(no_entity_in_two_splits, root)
    assert not result.passed and verdict(result).startswith(
        "entities in more than one split: 1 of 300"
    )
    assert len(result.metadata()["offenders"]) == 1


def test_statistics_must_be_fitted_on_the_current_train_split(built, tmp_path: Path) -> None:
    root = copy_project(built[0], tmp_path)
    assert run_check(fitted_on_exactly_train, root).passed
    stage = root / "data" / "split_documents"
    doc = read_parquet(part_path(stage / "train", 1), ["doc_id"]).column(0)[0].as_py()
    move_row(stage, doc, "validation")  # the fit used a row that is held out now
    result = run_check(fitted_on_exactly_train, root)
    assert not result.passed
    assert "fitted rows no longer in train: 1; fingerprints differ" in verdict(result)


def test_refitted_split_is_caught(built, tmp_path: Path) -> None:
    root = copy_project(built[0], tmp_path)
    assert run_check(normalized_with_frozen_train_statistics, root).passed
    path = generation_path(root / "data" / "normalized_splits" / "test", 2, 0)
    table = read_parquet(path)
    clicks = table.column("clicks")
    refit = pc.divide(pc.subtract(clicks, pc.mean(clicks)), pc.stddev(clicks))  # fitted on test
    write_parquet(table.set_column(table.schema.get_field_index("clicks"), "clicks", refit), path)
    result = run_check(normalized_with_frozen_train_statistics, root)
    assert not result.passed and "test shard 2: clicks" in result.metadata()["offenders"][0]


def test_asof_check_catches_a_future_value(built, tmp_path: Path) -> None:
    root = copy_project(built[0], tmp_path)
    assert run_check(asof_features_causal, root).passed
    stage = root / "data" / "split_documents" / "train"
    for shard in range(8):  # plant a wrong value in every shard so the sample must meet one
        path = generation_path(stage, shard, 0)
        table = read_parquet(path)
        index = table.schema.get_field_index("author_posts_90d")
        values = [v + 1000.0 if v is not None else 1000.0 for v in table.column(index).to_pylist()]
        write_parquet(
            table.set_column(index, "author_posts_90d", pa.array(values, pa.float64())), path
        )
    result = run_check(asof_features_causal, root)
    assert not result.passed and result.metadata()["mismatches"]


def test_tolerances_are_enforced(built, tmp_path: Path) -> None:
    root = copy_project(built[0], tmp_path)
    assert run_check(split_ratios_within_tolerance, root).passed
    assert run_check(mix_proportions_within_tolerance, root).passed
    set_config(root, split={"tolerance": 0.001}, mix={"tolerance": 0.0001})
    assert not run_check(split_ratios_within_tolerance, root).passed
    assert not run_check(mix_proportions_within_tolerance, root).passed


def test_a_mix_drawn_by_a_faulty_planner_fails_the_check(
    built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check reads its targets from the settings itself: a planner that drops the
    temperature draws natural shares, which the check refuses; the honest planner passes."""
    root = copy_project(built[0], tmp_path)
    set_config(root, mix={"proportions": {}, "temperature": 4.0})

    def without_temperature(available: dict[str, int], **settings: object) -> MixPlan:
        return plan_mix(available, **{**settings, "temperature": 1.0})

    monkeypatch.setattr("corpus_platform.defs.mixing.draws.plan_mix", without_temperature)
    faulty = build(root, ["training_mix"])
    check = faulty.check("mix_proportions_within_tolerance")
    assert not faulty.ok and not check.passed
    monkeypatch.undo()
    honest = build(root, ["training_mix"])
    assert honest.ok and honest.check("mix_proportions_within_tolerance").passed


def test_benchmark_overlap_flag_fails_and_drop_passes(built, tmp_path: Path) -> None:
    root = copy_project(built[0], tmp_path)
    dropped = built[1].materialized["training_mix"]["contaminated_rows_per_eval_set"]
    assert dropped.get("benchmark", 0) > 0  # the sample plants copied passages
    assert run_check(no_benchmark_ngram_overlap, root).passed
    set_config(root, decontamination={"action": "flag"})
    report = build(root, ["training_mix"])
    check = report.check("no_benchmark_ngram_overlap")
    assert not check.passed and not report.ok
    assert check.verdict.startswith("training rows sharing a 13-gram with an evaluation set: ")
    assert not check.verdict.endswith(": 0 of 0")


def test_held_out_rows_moving_into_train_fail_stability(built, tmp_path: Path) -> None:
    root = copy_project(built[0], tmp_path)
    set_config(root, seed=12345)  # a new seed reshuffles components between splits
    report = build(root, ["split_documents"])
    stability = report.check("no_held_out_row_moved_into_train")
    assert not stability.passed
    assert "held-out rows moved into train: 0" not in stability.verdict


def test_time_group_split_on_a_recommendation_table(recsys_built) -> None:
    _, report = recsys_built
    assert report.ok, report.render()
    assert report.check("no_entity_in_two_splits").passed
    assert report.check("temporal_order").verdict == "time never runs backwards across splits"
    assert report.check("asof_features_causal").passed
    dropped = report.materialized["split_documents"]["dropped"]
    assert dropped["embargo"] > 0 and dropped["outside_window"] > 0


def test_the_ratio_check_shows_row_shares_and_where_held_out_rows_went(recsys_built) -> None:
    root, report = recsys_built
    check = run_check(split_ratios_within_tolerance, root)
    metadata = check.metadata()
    stage = root / "data" / "split_documents"
    rows = {
        n: sum(len(read_parquet(p, ["doc_id"])) for p in (stage / n).glob("*.parquet"))
        for n in SPLITS
    }
    total = sum(rows.values())
    assert metadata["row_shares"] == {n: round(rows[n] / total, 4) for n in SPLITS}
    assert "components" in metadata  # time_group measures components, and shows rows beside
    reasons: dict[str, int] = {}
    for path in (stage / "dropped").glob("*.parquet"):
        for reason in read_parquet(path, ["reason"]).column(0).to_pylist():
            reasons[reason] = reasons.get(reason, 0) + 1
    by_reason = metadata["dropped_by_reason_and_bucket"]
    assert {r: sum(by.values()) for r, by in by_reason.items()} == reasons
    assert reasons == report.materialized["split_documents"]["dropped"]
    held_out = sum(by.get(n, 0) for by in by_reason.values() for n in ("validation", "test"))
    assert held_out > 0 and "; held-out rows dropped: " in verdict(check)
    assert "; row shares train " in verdict(check)


def test_time_running_backwards_fails_temporal_order(recsys_built, tmp_path: Path) -> None:
    root = copy_project(recsys_built[0], tmp_path)
    stage = root / "data" / "split_documents"
    test_doc = read_parquet(part_path(stage / "test", 0), ["doc_id"]).column(0)[0].as_py()
    move_row(stage, test_doc, "train")
    result = run_check(temporal_order, root)
    assert not result.passed and "train ends at" in verdict(result)


@pytest.mark.parametrize(("mode", "passes"), [("group", True), ("row", False)])
def test_annotated_clusters_stay_on_one_side(
    built, tmp_path: Path, mode: str, passes: bool
) -> None:
    root = copy_project(built[0], tmp_path)
    set_config(root, dedup={"mode": "annotate"}, split={"mode": mode})
    shutil.rmtree(root / "data" / "split_documents")  # a fresh split: nothing to be stable against
    report = build(root, ["deduplicated_documents", "split_documents"])
    kept = report.materialized["deduplicated_documents"]
    assert kept["rows"] == kept["rows_in"]  # annotate keeps every member
    assert report.check("no_cluster_in_two_splits").passed is passes
    assert report.check("no_train_neighbour_of_held_out_rows").passed is passes


def test_great_expectations_suite_names_column_and_rows(built, tmp_path: Path) -> None:
    from corpus_platform.defs.ingest.checks import great_expectations_suite

    root = copy_project(built[0], tmp_path)
    assert run_check(great_expectations_suite, root).passed
    set_config(root, input={"ranges": {"clicks": [0, 5]}})
    result = run_check(great_expectations_suite, root)
    assert not result.passed
    failure = result.metadata()["failures"][0]
    assert "expect_column_values_to_be_between(clicks)" in failure
    assert re.search(r": \d+ row\(s\), e\.g\. [\w/.-]+ row \d+", failure), failure


def test_explain_names_the_filter_score_and_threshold(built) -> None:
    from corpus_platform.trace import explain

    root = built[0]
    removed = read_parquet(part_path(root / "data" / "filtered_documents" / "removed", 0))
    by_reason = {
        r: d
        for r, d in zip(
            removed.column("reason").to_pylist(), removed.column("doc_id").to_pylist(), strict=True
        )
    }
    text = explain(root, by_reason["min_chars"])
    assert "REMOVED by min_chars (score " in text and "threshold 200)" in text
    assert "FAIL min_chars: score" in text
    kept = (
        read_parquet(part_path(root / "data" / "filtered_documents", 0)).column("doc_id")[0].as_py()
    )
    assert ": kept" in explain(root, kept)
