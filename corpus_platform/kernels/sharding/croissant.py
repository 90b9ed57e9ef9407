"""Croissant 1.1 metadata of a release, as a JSON-LD dict: every published file as a
``cr:FileObject`` with its sha256, the Parquet shards as a ``cr:FileSet`` read by the record set
``samples`` (one field per column), the license (``annotations.license``, else ``unknown``),
PROV-O provenance (the run, code and config that generated it; the stage snapshots, raw snapshot,
raw files and inputs it derives from) and the Responsible-AI (``rai:``) fields written from the
registry's counts and the recorded config. Pure: :mod:`corpus_platform.export` gathers the facts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

import pyarrow as pa

from corpus_platform.base.names import (
    RAW_DOCUMENTS,
    SHARDS_MANIFEST,
    STAGES,
)
from corpus_platform.kernels.sharding.card import (
    CARD_FILE,
    CardFacts,
    mix_licences,
)
from corpus_platform.kernels.sharding.responsible_ai import responsible_ai

CROISSANT_1_1 = "http://mlcommons.org/croissant/1.1"
PROV = "http://www.w3.org/ns/prov#"
URN = "urn:corpus-platform"
SAMPLES = "samples"  # the record set of the Parquet shards' rows
PARQUET_SET = "parquet-shards"
UNKNOWN = "unknown"
CR_TERMS = (  # noqa: SIM905 (the cr: terms of mlcroissant's @context for conformsTo 1.1)
    "arrayShape citeAs column containedIn equivalentProperty extract field fileProperty "
    "fileObject fileSet format includes isArray isLiveDataset jsonPath key md5 parentField path "
    "recordSet references regex repeated replace samplingRate separator source subField transform"
).split()
# the @context of Croissant 1.1 plus the PROV-O prefix
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/",
    "prov": PROV,
    "conformsTo": "dct:conformsTo",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "description": {"@container": "@language"},
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "name": {"@container": "@language"},
    **{term: f"cr:{term}" for term in CR_TERMS},
}
PARQUET_TYPE = "application/x-parquet"
MEDIA_TYPES = {".parquet": PARQUET_TYPE, ".tar": "application/x-tar", ".json": "application/json"}
MEDIA_TYPES |= {".md": "text/markdown", ".png": "image/png"}
COLUMNS = {
    "key": "The sample's key, <doc_id>-<draw> (a hashed doc_id where it is no safe tar name); "
    "its member name in the tar shard of the same number.",
    "draw": "Which draw of its row the sample is (0 .. times_drawn - 1).",
    "doc_id": "The row's stable id in the raw corpus.",
    "text": "The text, after PII replacement and C4 boilerplate-line removal.",
    "source": "The source the row came from (input column mapped to source).",
    "entity": "The unit of independence (author, document, site): never in two splits.",
    "content_hash": "Hash of the row's normalized content (exact-duplicate key).",
    "raw_file": "The raw file the row was read from, relative to input.path.",
    "raw_row": "The row's position in its raw file.",
    "replacements": "The PII kinds and C4 line edits applied to the text.",
    "quality_score": "The filters' quality score: how far inside every threshold the row sits.",
    "cluster_id": "The row's duplicate cluster (its own doc_id when it has no duplicate).",
    "component": "The split component (rows linked by entity, cluster or similar pair).",
    "bucket": "The seeded hash bucket (0-9999) of the component, which chose the split.",
    "times_drawn": "How many times the training mix drew the row.",
}


@dataclass(frozen=True)
class FileFact:
    """One published file: its path in the shards folder, where the JSON-LD finds it, its hash."""

    path: str  # in data/training_shards, e.g. "train-000000.parquet" or "card/mix.png"
    content_url: str  # relative to the JSON-LD file's folder (or absolute)
    sha256: str
    size: int
    description: str


@dataclass(frozen=True)
class FilterFact:
    """One quality filter: its rule with the recorded threshold and the rows it removed."""

    name: str
    rule: str
    removed: int


@dataclass(frozen=True)
class ReleaseFacts:
    """Everything the Croissant file says, gathered by :mod:`corpus_platform.export`."""

    release: dict[str, Any]  # the release record (store.releases)
    card: CardFacts  # the chain's registry facts (defs.card.card_facts)
    files: tuple[FileFact, ...]
    schema: pa.Schema  # the Parquet shards' columns
    parquet_includes: str  # glob of the Parquet shards, relative to the JSON-LD file
    filters: tuple[FilterFact, ...]
    totals: dict[str, Any]  # the manifest's totals

    @property
    def annotations(self) -> dict[str, str]:
        """The recorded ``annotations`` (license, creator, url, ...); the license is ``unknown``
        unless declared (``annotations.license``) or recorded per row (``licenses``)."""
        return {"license": UNKNOWN, **(self.card.config.get("annotations") or {})}

    @property
    def licences(self) -> list[str]:
        """The dataset's licences: ``annotations.license`` when declared, else the licences
        of the rows drawn into the mix, else ``unknown``."""
        declared = (self.card.config.get("annotations") or {}).get("license")
        return [declared] if declared else mix_licences(self.card) or [UNKNOWN]


def media_type(path: str) -> str:
    """The encodingFormat of a published file, by its suffix."""
    return MEDIA_TYPES.get(PurePosixPath(path).suffix, "application/octet-stream")


def data_type(arrow: pa.DataType) -> tuple[str, bool]:
    """The Croissant dataType of an Arrow type and whether it is an array (a list column)."""
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        return data_type(arrow.value_type)[0], True
    checks = {"boolean": "sc:Boolean", "integer": "sc:Integer", "floating": "sc:Float"}
    checks |= {"decimal": "sc:Float", "timestamp": "sc:DateTime", "date": "sc:Date"}
    found = (t for kind, t in checks.items() if getattr(pa.types, f"is_{kind}")(arrow))
    return next(found, "sc:Text"), False


def _ref(kind: str, label: str, *parts: str) -> dict[str, Any]:
    """A PROV-O node: its URN ``urn:corpus-platform:<parts>`` and a label (and type)."""
    node: dict[str, Any] = {"@id": ":".join([URN, *parts]), "prov:label": label}
    return {"@type": kind, **node} if kind else node


def _json(value: Any) -> str:
    return json.dumps(value or {}, sort_keys=True)


def column_description(name: str, config: dict[str, Any]) -> str:
    """What a Parquet column holds."""
    features = set(config.get("input", {}).get("features") or [])
    features |= {f.get("name") for f in config.get("asof_features") or []}
    if name in features:
        return f"Numeric feature {name}, scaled to (x - train mean) / train std."
    return COLUMNS.get(name, f"The row's {name}.")


def distribution(facts: ReleaseFacts) -> list[dict[str, Any]]:
    """A FileObject per published file and the FileSet of the Parquet shards."""
    files = [
        {
            "@type": "cr:FileObject",
            "@id": f.path,
            "name": f.path,
            "description": f.description,
            "contentUrl": f.content_url,
            "contentSize": f"{f.size} B",
            "encodingFormat": media_type(f.path),
            "sha256": f.sha256,
        }
        for f in facts.files
    ]
    parquet = [f.path for f in facts.files if media_type(f.path) == PARQUET_TYPE]
    fileset = {
        "@type": "cr:FileSet",
        "@id": PARQUET_SET,
        "name": PARQUET_SET,
        "description": f"The {len(parquet)} Parquet shards ({', '.join(parquet)}), the same "
        "bytes as their FileObjects, in shard order: links beside this file to "
        "data/training_shards, read as one table.",
        "encodingFormat": PARQUET_TYPE,
        "includes": facts.parquet_includes,
    }
    return [*files, fileset]


def record_set(facts: ReleaseFacts) -> dict[str, Any]:
    """The ``samples`` record set: one field per Parquet column, keyed by ``key``."""
    fields = [
        {
            "@type": "cr:Field",
            "@id": f"{SAMPLES}/{column.name}",
            "name": column.name,
            "description": column_description(column.name, facts.card.config),
            "dataType": data_type(column.type)[0],
            "source": {"fileSet": {"@id": PARQUET_SET}, "extract": {"column": column.name}},
            **({"isArray": True, "arrayShape": "-1"} if data_type(column.type)[1] else {}),
        }
        for column in facts.schema
    ]
    totals = facts.totals
    return {
        "@type": "cr:RecordSet",
        "@id": SAMPLES,
        "name": SAMPLES,
        "description": f"The training samples: {totals.get('samples', 0):,} samples in "
        f"{totals.get('shards', 0)} shards, one seeded global order (a row drawn k times by "
        "the mix is k samples). The tar shards hold the same samples in the same order.",
        "key": {"@id": f"{SAMPLES}/key"},
        "field": fields,
    }


def provenance(facts: ReleaseFacts) -> dict[str, Any]:
    """PROV-O: the run (code, config) that generated the release, the snapshots, raw files and
    inputs it was derived from."""
    release, commit = facts.release, facts.release["code_version"]
    run = release.get("run_id") or ""  # empty for `corpus release NAME`
    named = f"corpus release {release['name']} (named the published chain, no run)"
    activity = _ref("prov:Activity", f"corpus run {run}" if run else named)
    activity["@id"] = f"{URN}:run:{run}" if run else f"{URN}:release:{release['name']}"
    activity["prov:endedAtTime"] = release["created"]
    dirty = " with uncommitted changes" if release["code_dirty"] else ""
    label = f"corpus_platform at git commit {commit}{dirty}"
    activity["prov:wasAssociatedWith"] = _ref("prov:SoftwareAgent", label, "code", commit)
    config = release["config_hash"]
    activity["prov:used"] = _ref("prov:Entity", f"config hash {config}", "config", config)
    raw = release["raw_snapshot"]
    snapshots = sorted(release["snapshots"].items(), key=lambda kv: STAGES.index(kv[0]))
    inputs = [(n, s) for n, s in release.get("inputs", {}).items() if n != "raw"]
    files = facts.card.counts(RAW_DOCUMENTS).get("rows_per_file", {})
    derived = [_ref("", f"{a} snapshot {s}", "snapshot", a, s) for a, s in snapshots]
    derived.append(_ref("", f"raw snapshot {raw}", "snapshot", "raw", raw))
    derived += [
        _ref("", f"raw file {n} ({rows:,} rows)", "raw", raw, n) for n, rows in files.items()
    ]
    derived += [_ref("", f"input {n} snapshot {s}", "input", n, s) for n, s in inputs]
    return {"prov:wasGeneratedBy": activity, "prov:wasDerivedFrom": derived}


def croissant(facts: ReleaseFacts) -> dict[str, Any]:
    """The release's Croissant 1.1 JSON-LD."""
    release, notes = facts.release, facts.annotations
    created = datetime.fromisoformat(release["created"])
    version = notes.get("version") or (
        f"{created.year}.{created.month}.{created.day}+{release['name'].replace('_', '-')}"
    )
    languages = list(facts.card.config.get("filters", {}).get("languages") or [])
    name, urls = facts.card.name, {f.path: f.content_url for f in facts.files}
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CROISSANT_1_1,
        "name": name,
        "description": f"Release {release['name']} of {name}: the training shards of "
        f"training_shards snapshot {release['snapshot_id']} ({release.get('rows') or 0:,} "
        f"samples, {release.get('tokens') or 0:,} tokens), built by corpus_platform. Files are "
        "read from data/training_shards, which must hold this release "
        f"(`corpus checkout {release['name']}`).",
        "license": facts.licences[0] if len(facts.licences) == 1 else facts.licences,
        # the dataset card is the closest thing to a web page of the dataset
        "url": notes.get("url") or urls.get(CARD_FILE) or urls.get(SHARDS_MANIFEST, ""),
        "creator": {"@type": "sc:Organization", "name": notes.get("creator") or UNKNOWN},
        "datePublished": release["created"],
        "version": version,
        "citeAs": notes.get("citation")
        or f"@misc{{corpus_release_{release['name']}, title={{{name}, release "
        f"{release['name']}}}, note={{training_shards snapshot {release['snapshot_id']}}}, "
        f"year={{{created.year}}}}}",
        "keywords": ["corpus_platform", "deduplicated", "decontaminated", "leak-checked"],
        "inLanguage": languages,
        **provenance(facts),
        **responsible_ai(facts),
        "distribution": distribution(facts),
        "recordSet": [record_set(facts)],
    }
