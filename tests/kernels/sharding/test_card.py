"""The dataset card: a Hugging Face card header and the datasheet sections, from facts alone."""

from pathlib import Path

import yaml

from corpus_platform.kernels.sharding.card import (
    CardFacts,
    StageFacts,
    card_for_ui,
    render_card,
    write_charts,
)

STAGES = (
    StageFacts(
        "raw_documents",
        "r1.dir",
        {"rows": 120, "files": 2, "rows_per_file": {"a.jsonl": 70, "b.csv": 50}},
        {"ids_unique": ("PASS", "0 of 120")},
    ),
    StageFacts(
        "filtered_documents",
        "f1.dir",
        {"rows_in": 120, "rows": 100, "removed_by_filter": {"min_chars": 15, "stop_words": 5}},
        {},
    ),
    StageFacts(
        "deduplicated_documents",
        "d1.dir",
        {"rows_in": 100, "rows": 90, "duplicate_clusters": 8, "rows_in_clusters": 18},
        {},
    ),
    StageFacts(
        "split_documents",
        "s1.dir",
        {"mode": "group", "split_sizes": {"train": 72, "validation": 9, "test": 9}},
        {"no_entity_in_two_splits": ("FAIL", "entities in more than one split: 2 of 40")},
    ),
    StageFacts(
        "training_mix",
        "m1.dir",
        {
            "rows": 60,
            "available_per_source": {"web": 50, "code": 22},
            "drawn_per_source": {"web": 42, "code": 18},
            "rates": {"web": 0.84, "code": 0.82},
        },
        {},
    ),
)
FACTS = CardFacts(
    name="my mix",
    stages=STAGES,
    config={
        "filters": {"languages": ["en"]},
        "mix": {"proportions": {"web": 0.7, "code": 0.3}},
        "dedup": {"shingle_size": 5, "threshold": 0.8},
    },
    raw_snapshot="raw0.dir",
    shards={"shards": 3, "samples": 60},
)


def test_the_card_has_a_hugging_face_header_and_every_datasheet_section() -> None:
    card = render_card(FACTS, ["import pandas as pd"])
    assert card.startswith("---\n")
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["pretty_name"] == "my mix" and meta["language"] == ["en"]
    assert meta["size_categories"] == ["n<1K"]
    assert meta["configs"][0]["data_files"][0] == {"split": "train", "path": "*.parquet"}
    sections = [line[3:] for line in card.splitlines() if line.startswith("## ")]
    assert sections == [
        "Motivation",
        "Composition",
        "Collection process",
        "Preprocessing",
        "Uses",
        "Distribution",
        "Maintenance",
    ]
    assert "| web | 50 | 42 | 70.0% | 70.0% | 0.84 |" in card
    assert "| split_documents | no_entity_in_two_splits | FAIL | entities in more than one" in card
    assert "`corpus replay m1.dir`" in card and "| stage | snapshot id |" in card
    assert "| min_chars | 15 |" in card and "Sizes: train 72, validation 9, test 9." in card
    assert "import pandas as pd" in card and "Shards: samples 60, shards 3." in card  # sorted


def test_equal_facts_give_equal_cards_and_charts(tmp_path: Path) -> None:
    assert render_card(FACTS, []) == render_card(FACTS, [])
    first = [p.read_bytes() for p in write_charts(FACTS, tmp_path / "a")]
    second = [p.read_bytes() for p in write_charts(FACTS, tmp_path / "b")]
    assert first == second and len(first) == 3 and all(b.startswith(b"\x89PNG") for b in first)


def test_the_ui_shows_the_body_with_charts_inlined(tmp_path: Path) -> None:
    write_charts(FACTS, tmp_path)
    shown = card_for_ui(render_card(FACTS, []), tmp_path)
    assert not shown.startswith("---") and shown.startswith("\n# my mix")
    assert "(card/" not in shown and shown.count("data:image/png;base64,") == 3
