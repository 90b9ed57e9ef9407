"""split_documents: train / validation / test decided from the stable component key."""

from collections import Counter
from functools import partial

import dagster as dg

from corpus_platform.config import SPLITS
from corpus_platform.defs.names import DEDUPLICATED_DOCUMENTS, SPLIT_DOCUMENTS
from corpus_platform.defs.publish import publish
from corpus_platform.defs.resources import CorpusProject
from corpus_platform.kernels.split import entity_components, split_shard
from corpus_platform.store.datasets import MANIFEST, read_parquet, staged_folder, write_json


@dg.asset(
    name=SPLIT_DOCUMENTS,
    deps=[DEDUPLICATED_DOCUMENTS],
    group_name="split",
    kinds={"parquet", "dvc"},
    description="train/, validation/ and test/ folders. Rows sharing an entity or a similarity "
    "link form one component; the component's seeded hash bucket picks the split.",
)
def split_documents(corpus: CorpusProject) -> dg.MaterializeResult:
    config = corpus.load()
    upstream = corpus.stage_dir(DEDUPLICATED_DOCUMENTS)
    pairs = read_parquet(upstream / "pairs" / "similar_pairs.parquet")
    components = entity_components(pairs) if config.split.mode == "group" else {}
    with staged_folder(corpus.stage_dir(SPLIT_DOCUMENTS)) as staging:
        task = partial(
            split_shard,
            upstream=upstream,
            staging=staging,
            components=components,
            ratios=config.split.ratios,
            seed=config.seed,
            mode=config.split.mode,
        )
        totals: Counter[str] = Counter()
        for per_split in corpus.engine(config).map_shards(task, range(config.num_shards)):
            totals.update(per_split)
        sizes = {name: totals.get(name, 0) for name in SPLITS}
        counts = {"rows": sum(sizes.values()), "split_sizes": sizes, "mode": config.split.mode}
        write_json(counts, staging / MANIFEST)
    linked = len(set(components.values()))
    return publish(
        corpus,
        config,
        SPLIT_DOCUMENTS,
        [DEDUPLICATED_DOCUMENTS],
        counts,
        {"linked_components": linked},
    )
