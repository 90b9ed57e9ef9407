"""The CPU profile's sorting of py-spy samples into categories (bench/cpu_profile.py)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from cpu_profile import OTHER, categorize  # noqa: E402

MAIN = 'process 1:"python -c build"'
BUILD = 'process 2:"python -c import sys; import dagster as dg; run_build(x)"'
DVC = 'process 9:"python -m dvc [["add", "-q", "data/x"], ["push", "data/x.dvc"]]"'
FILTER = "filter_shard (corpus_platform/kernels/filtering/stage.py:125)"
SCORES = "text_scores (corpus_platform/kernels/filtering/textstats.py:327)"
PII = "corpus_platform/kernels/filtering/pii.py"
WRITE = "write_table (pyarrow/parquet/core.py:2078)"


def test_first_matching_category_takes_the_sample(tmp_path: Path) -> None:
    raw = tmp_path / "samples.txt"
    raw.write_text(
        "\n".join(
            [
                f"{MAIN};run (x.py:1);{FILTER};{SCORES};wrapper (pyarrow/compute.py:272) 7",
                f"{MAIN};run (x.py:1);{FILTER};{WRITE} 3",
                f"{MAIN};run (x.py:1);{FILTER};scrub_all ({PII}:135) 2",
                f"{DVC};main (dvc/cli/__init__.py:10);file_md5 (dvc_data/hashfile/hash.py:1) 5",
                f"{MAIN};select (selectors.py:415) 1",
                f"{BUILD};select (selectors.py:415) 2",  # its command line holds "dagster" and ";"
                "a truncated line without a count",
            ]
        ),
        encoding="utf-8",
    )
    counts = categorize(raw)
    assert counts == {
        "filter: text scores (Gopher, C4 statistics)": 7,
        "Parquet writes (LZ4 or zstd, statistics)": 3,
        "filter: PII, boilerplate lines, verdicts": 2,
        "DVC pinning (dvc add and push: hashing, copying to the remote)": 5,
        OTHER: 3,
    }
