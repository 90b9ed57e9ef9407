"""How every blocking check is declared: redacted, and recorded in the snapshot registry."""

import functools
from collections.abc import Callable
from typing import Any

import dagster as dg

from corpus_platform.defs.resources import CorpusProject
from corpus_platform.redact import redact
from corpus_platform.store.registry import CHECK, append_record
from corpus_platform.store.snapshots import current_snapshot

CheckFn = Callable[[CorpusProject], dg.AssetCheckResult]


def plain_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata values as plain Python values."""
    return {key: getattr(value, "value", value) for key, value in metadata.items()}


def record_check(
    corpus: CorpusProject, asset: str, result: dg.AssetCheckResult
) -> dg.AssetCheckResult:
    """Redact a check result and append its verdict to the registry against the asset's
    current snapshot."""
    metadata = redact(plain_metadata(dict(result.metadata)))
    snapshot = current_snapshot(corpus.root_path, corpus.stage_dir(asset)) or "unpinned"
    append_record(
        corpus.root_path,
        CHECK,
        {
            "asset": asset,
            "check": result.check_name,
            "snapshot_id": snapshot,
            "passed": result.passed,
            "verdict": metadata.get("verdict", ""),
        },
    )
    return dg.AssetCheckResult(
        passed=result.passed, check_name=result.check_name, metadata=metadata
    )


def corpus_check(*, asset: str, name: str) -> Callable[[CheckFn], dg.AssetChecksDefinition]:
    """Declare a blocking asset check whose verdict is redacted and recorded."""

    def decorate(fn: CheckFn) -> dg.AssetChecksDefinition:
        @functools.wraps(fn)
        def run(corpus: CorpusProject) -> dg.AssetCheckResult:
            result = fn(corpus)
            named = dg.AssetCheckResult(
                passed=result.passed, check_name=name, metadata=result.metadata
            )
            return record_check(corpus, asset, named)

        return dg.asset_check(asset=asset, name=name, blocking=True, description=fn.__doc__)(run)

    return decorate
