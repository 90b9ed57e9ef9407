"""The dataset card beside the shards: a Hugging Face card whose one-line loads work."""

import os
import subprocess
import sys
from pathlib import Path

import yaml

from corpus_platform.base.names import SHARDS_MANIFEST, TRAINING_SHARDS
from corpus_platform.base.shards import read_json
from corpus_platform.defs.card import load_lines
from corpus_platform.defs.splitting.checks import STABILITY_CARD_VERDICT


def test_every_build_writes_a_card_with_its_numbers_and_charts(built) -> None:
    root, report, _ = built
    folder = root / "data" / TRAINING_SHARDS
    card = (folder / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["configs"][0]["data_files"][0]["path"] == "*.parquet"
    assert meta["size_categories"] == ["1K<n<10K"]
    mix = report.materialized["training_mix"]
    assert f"The training mix holds **{mix['rows']:,} rows**" in card
    for stage in ("raw_documents", "split_documents", "training_mix"):
        assert report.materialized[stage]["snapshot_id"] in card
    assert "| training_mix | no_benchmark_ngram_overlap | PASS |" in card and "FAIL" not in card
    # a first build's stability verdict ("nothing to compare") would differ on a rebuild: the
    # card shows the check's history-free card_verdict instead
    stability = (
        f"| split_documents | no_held_out_row_moved_into_train | ok | {STABILITY_CARD_VERDICT} |"
    )
    assert stability in card and "nothing to compare" not in card
    # the sample's group split promises no time order: its check is not applicable, not a pass
    assert "| split_documents | temporal_order | n/a |" in card
    manifest = read_json(folder / SHARDS_MANIFEST)
    listed = [entry["name"] for entry in manifest["card"]]
    assert listed == ["README.md", "card/funnel.png", "card/mix.png", "card/splits.png"]
    assert all((folder / name).is_file() for name in listed)
    shown = report.materialized[TRAINING_SHARDS]
    assert shown["rows"] == manifest["totals"]["samples"]


def test_the_cards_one_line_loads_run(built, tmp_path: Path) -> None:
    root, _, _ = built
    folder = root / "data" / TRAINING_SHARDS
    samples = read_json(folder / SHARDS_MANIFEST)["totals"]["samples"]
    lines = load_lines("")
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert all(line in card for line in lines)
    script = "\n".join([*lines, "print(ds.num_rows, len(df), sum(n for _, n in rel.fetchall()))"])
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=folder, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(samples)] * 3
