"""The pipeline configuration (``corpus.yaml``), validated into frozen models.

Every field is checked when the file is loaded; a bad field raises :class:`ConfigError` whose
message names the file, the dotted field path, what was wrong and how to fix it. Nothing
downstream re-validates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from corpus_platform.base.errors import CorpusError
from corpus_platform.base.hashing import stable_hex
from corpus_platform.base.names import SPLITS
from corpus_platform.base.redact import redact
from corpus_platform.base.snapshot_remote import SnapshotsConfig
from corpus_platform.base.text_codecs import check_encoding
from corpus_platform.config.engine import EngineConfig
from corpus_platform.config.mix import MixConfig
from corpus_platform.config.outputs import LicensesConfig, StatisticsConfig

CANONICAL_COLUMNS = ("doc_id", "text", "source", "entity", "timestamp", "label", "url", "license")

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
PositiveInt = Annotated[int, Field(gt=0)]


class ConfigError(CorpusError):
    """A corpus.yaml that cannot be used; the message says where and how to fix it."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputConfig(_Model):
    """Where raw files live, how they are decoded and how their columns map onto the canonical
    schema. ``encoding`` (a Python codec) decodes jsonl, jsonl.gz and csv files; on an
    undecodable byte ``decode_errors: fail`` names the file, line and byte, ``replace`` turns it
    into U+FFFD and counts it in the raw_documents metadata (Parquet text too)."""

    path: str = "data/raw"
    encoding: str = "utf-8"
    decode_errors: Literal["fail", "replace"] = "fail"
    columns: dict[str, str] = Field(default_factory=dict)
    features: tuple[str, ...] = ()
    ranges: dict[str, tuple[float | None, float | None]] = Field(default_factory=dict)

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, encoding: str) -> str:
        return check_encoding(encoding)

    @field_validator("columns")
    @classmethod
    def _known_columns(cls, columns: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(columns) - set(CANONICAL_COLUMNS))
        if unknown:
            raise ValueError(
                f"unknown canonical column(s) {unknown}; map only {list(CANONICAL_COLUMNS)}"
            )
        if "doc_id" not in columns:
            raise ValueError("columns.doc_id is required: name the input column holding the id")
        return columns

    @field_validator("features")
    @classmethod
    def _feature_names(cls, features: tuple[str, ...]) -> tuple[str, ...]:
        overlap = set(features) & set(CANONICAL_COLUMNS)
        if overlap:
            raise ValueError(f"features {sorted(overlap)} clash with canonical column names")
        return features

    def input_name(self, canonical: str) -> str | None:
        """The input column mapped to ``canonical``, or None when it is not mapped."""
        return self.columns.get(canonical)


class DomainLists(_Model):
    """Host names (and their subdomains) to allow or deny on the ``url`` column."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()


PiiAction = Literal["replace", "drop", "keep"]


class FilterConfig(_Model):
    """Quality filter thresholds; sources in the table of kernels.filtering.filters."""

    min_chars: PositiveInt = 200
    max_chars: PositiveInt = 100_000
    min_words: PositiveInt = 50
    max_words: PositiveInt = 100_000
    min_mean_word_length: Annotated[float, Field(ge=0)] = 3.0
    max_mean_word_length: Annotated[float, Field(gt=0)] = 10.0
    max_symbol_word_ratio: Annotated[float, Field(ge=0)] = 0.1
    max_bullet_lines_ratio: Fraction = 0.9
    max_ellipsis_lines_ratio: Fraction = 0.3
    min_alpha_words_ratio: Fraction = 0.8
    min_stop_words: Annotated[int, Field(ge=0, le=8)] = 2
    max_duplicate_line_fraction: Fraction = 0.30
    max_duplicate_paragraph_fraction: Fraction = 0.30
    max_duplicate_line_char_fraction: Fraction = 0.20
    max_duplicate_paragraph_char_fraction: Fraction = 0.20
    max_top_ngram_char_fraction: dict[int, Fraction] = Field(
        default_factory=lambda: {2: 0.20, 3: 0.18, 4: 0.16}
    )
    max_duplicate_ngram_char_fraction: dict[int, Fraction] = Field(
        default_factory=lambda: {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}
    )
    c4_lorem_ipsum: bool = True
    c4_curly_braces: bool = True
    c4_remove_boilerplate_lines: bool = True
    max_url_ratio: Fraction = 0.1
    max_code_line_ratio: Fraction = 0.5
    blocklist: str | None = None
    max_blocklist_words: Annotated[int, Field(ge=0)] = 0
    domains: DomainLists = Field(default_factory=DomainLists)
    languages: tuple[str, ...] = ()
    language_candidates: tuple[str, ...] = ("en", "de", "fr", "es", "it", "pt", "nl")
    min_language_confidence: Fraction = 0.65
    language_backend: Literal["lingua", "fasttext"] = "fasttext"  # kernels.filtering.langid
    # characters of each text the backend reads (0: all; null: lingua all, fasttext 500)
    language_max_chars: Annotated[int, Field(ge=0)] | None = None
    pii: dict[str, PiiAction] = Field(
        default_factory=lambda: {
            "email": "replace",
            "phone": "replace",
            "ip": "replace",
            "credit_card": "drop",
            "ssn": "drop",
        }
    )
    exempt: dict[str, tuple[str, ...]] = Field(default_factory=dict)

    @field_validator("max_top_ngram_char_fraction")
    @classmethod
    def _top_ngrams(cls, value: dict[int, float]) -> dict[int, float]:
        if set(value) != {2, 3, 4}:
            raise ValueError("give thresholds for n = 2, 3 and 4")
        return value

    @field_validator("max_duplicate_ngram_char_fraction")
    @classmethod
    def _dup_ngrams(cls, value: dict[int, float]) -> dict[int, float]:
        if set(value) != set(range(5, 11)):
            raise ValueError("give thresholds for n = 5 to 10")
        return value

    @field_validator("pii")
    @classmethod
    def _pii_kinds(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - {"email", "phone", "ip", "credit_card", "ssn"})
        if unknown:
            raise ValueError(
                f"unknown PII kind(s) {unknown}; use email, phone, ip, credit_card, ssn"
            )
        return value

    @model_validator(mode="after")
    def _ranges(self) -> FilterConfig:
        if self.min_chars >= self.max_chars:
            raise ValueError("min_chars must be smaller than max_chars")
        if self.min_words >= self.max_words:
            raise ValueError("min_words must be smaller than max_words")
        return self


class NormalizationConfig(_Model):
    """How text is normalized before exact hashing and shingling (see ``TextNormalization``)."""

    unicode: Literal["NFC", "NFKC", "NFD", "NFKD", "none"] = "NFKC"
    casefold: bool = True
    tokens: Literal["words", "whitespace"] = "words"
    whitespace: bool = True
    punctuation: bool = False


class DedupConfig(_Model):
    """Exact and MinHash near-duplicate detection."""

    num_perm: Annotated[int, Field(ge=16, le=1024)] = 128
    shingle_size: Annotated[int, Field(ge=1, le=20)] = 5
    threshold: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.8
    mode: Literal["drop", "annotate"] = "drop"
    columns: tuple[str, ...] = ()
    normalization: NormalizationConfig = Field(default_factory=NormalizationConfig)
    keep: Literal["quality", "smallest_id"] = "quality"
    verify: bool = True


class SplitConfig(_Model):
    """How rows are assigned to train / validation / test. ``max_component_share`` and
    ``oversize`` guard the group modes against a giant component (rows chained through shared
    entities, duplicate clusters and similar pairs: license text repeated across packages joined
    68% of one real corpus). A component is placed whole, so one holding a share ``s`` of the
    rows moves its split's share by up to ``s``; the default 0.05 stays within the default
    ``tolerance``. ``oversize: fail`` stops the split naming the component; ``cut`` separates
    it, never breaking an entity or a duplicate cluster, and drops the fewest bridging rows into
    ``dropped/`` (reason ``bridge``; :mod:`~.kernels.cut`). ``epoch`` changes a split on
    purpose: a higher epoch may move held-out rows into train (listed in ``epoch_moves/``);
    within an epoch the stability check forbids it."""

    mode: Literal["group", "row", "time", "time_group"] = "group"
    ratios: dict[str, Fraction] = Field(
        default_factory=lambda: {"train": 0.8, "validation": 0.1, "test": 0.1}
    )
    similarity_threshold: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.6
    tolerance: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.05
    gap_days: Annotated[float, Field(ge=0.0)] = 0.0
    max_component_share: Annotated[float, Field(gt=0.0, le=1.0)] = 0.05
    oversize: Literal["fail", "cut"] = "fail"
    epoch: Annotated[int, Field(ge=0)] = 0
    # held-out rows compared with every train row by exact Jaccard, no band keys (0: off)
    recall_sample: Annotated[int, Field(ge=0)] = 200
    # a link made only through a dropped duplicate (its cluster membership, a similar pair with
    # a dropped end) joins entities (true) or is left out and counted (false)
    link_dropped: bool = True
    # a similar pair or duplicate cluster joins entities, and counts as a leak across splits,
    # only when its texts have at least this many distinct word n-grams (dedup.shingle_size):
    # boilerplate such as "New upstream release" links nothing (0: every pair links)
    min_link_shingles: Annotated[int, Field(ge=0)] = 10

    @property
    def uses_time(self) -> bool:
        """True for the temporal modes, which need a timestamp on every row."""
        return self.mode in ("time", "time_group")

    @field_validator("ratios")
    @classmethod
    def _ratios(cls, ratios: dict[str, float]) -> dict[str, float]:
        if set(ratios) != set(SPLITS):
            raise ValueError(f"ratios must name exactly {list(SPLITS)}, got {sorted(ratios)}")
        total = sum(ratios.values())
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"ratios must sum to 1.0, got {total:g}")
        return ratios


class ShardsConfig(_Model):
    """training_shards: ``max_bytes`` caps each tar file, headers and padding included (a tar is
    a multiple of 10,240 bytes; a larger sample gets a shard of its own), ``max_samples`` the
    samples per shard (none: bytes only). Parquet shards hold the same samples as the tars."""

    max_bytes: Annotated[int, Field(ge=10_240)] = 256 * 2**20
    max_samples: PositiveInt | None = None


class AsofFeature(_Model):
    """An as-of feature: an aggregate of an entity's strictly earlier rows within a window."""

    name: str
    column: str
    agg: Literal["mean", "sum", "count"] = "mean"
    window_days: Annotated[float, Field(gt=0.0)] = 30.0


class DecontaminationConfig(_Model):
    """Evaluation / benchmark sets that must share no word n-gram with the training mix."""

    eval_sets: dict[str, str] = Field(default_factory=dict)
    text_column: str = "text"
    ngram: Annotated[int, Field(ge=3, le=50)] = 13
    action: Literal["flag", "drop"] = "flag"


class CorpusConfig(_Model):
    """The whole corpus.yaml."""

    seed: Annotated[int, Field(ge=0)] = 0
    num_shards: Annotated[int, Field(ge=1, le=100_000)] = 8
    input: InputConfig = Field(default_factory=InputConfig)
    filters: FilterConfig = Field(default_factory=FilterConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    split: SplitConfig = Field(default_factory=SplitConfig)
    mix: MixConfig = Field(default_factory=MixConfig)
    shards: ShardsConfig = Field(default_factory=ShardsConfig)
    asof_features: tuple[AsofFeature, ...] = ()
    statistics: StatisticsConfig = Field(default_factory=StatisticsConfig)
    decontamination: DecontaminationConfig = Field(default_factory=DecontaminationConfig)
    licenses: LicensesConfig = Field(default_factory=LicensesConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    snapshots: SnapshotsConfig = Field(default_factory=SnapshotsConfig)  # where, not what
    annotations: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _thresholds(self) -> CorpusConfig:
        if self.split.similarity_threshold > self.dedup.threshold:
            raise ValueError(
                "split.similarity_threshold must not exceed dedup.threshold: rows too similar "
                "to keep apart must be at least as similar as duplicates"
            )
        known = {*CANONICAL_COLUMNS, *self.input.features}
        unknown = sorted(set(self.dedup.columns) - known)
        if unknown:
            raise ValueError(
                f"dedup.columns {unknown} are not columns of the data; use {sorted(known)}"
            )
        allowed = {*self.input.features, "label"}
        for feature in self.asof_features:
            if feature.column not in allowed:
                raise ValueError(
                    f"asof_features {feature.name!r}: column {feature.column!r} must be one of "
                    f"{sorted(allowed)} (a declared feature or the label)"
                )
        names = [f.name for f in self.asof_features]
        clash = sorted({n for n in names if names.count(n) > 1 or n in allowed})
        if clash:
            raise ValueError(f"asof_features names {clash} repeat or clash with existing columns")
        if self.mix.unit == "tokens" and "tokens" in self.feature_columns:
            raise ValueError("mix.unit tokens writes a column `tokens`; rename feature `tokens`")
        if self.asof_features and "timestamp" not in self.input.columns:
            raise ValueError("asof_features need input.columns.timestamp")
        if self.split.uses_time and "timestamp" not in self.input.columns:
            raise ValueError(f"split.mode {self.split.mode!r} needs input.columns.timestamp")
        return self

    @property
    def records_licences(self) -> bool:
        """Rows carry a ``license`` column: a licence column is mapped, a source has a licence
        or a licence is denied."""
        settings = self.licenses
        return "license" in self.input.columns or bool(settings.sources or settings.deny)

    @property
    def feature_columns(self) -> tuple[str, ...]:
        """Numeric columns statistics are fitted on: declared features, then as-of features."""
        return (*self.input.features, *(f.name for f in self.asof_features))

    def canonical_json(self) -> str:
        """The settings that shape outputs as canonical JSON (sorted keys; no annotations and
        no snapshot remote)."""
        data = self.model_dump(mode="json", exclude={"annotations", "snapshots"})
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    def recorded(self) -> dict[str, object]:
        """The config as recorded with snapshots: every setting, secrets and personal data
        redacted. Annotations never affect outputs, so replaying it gives the same hash; the
        snapshot remote is left out (a replay uses the remote of the project it runs in)."""
        return redact(self.model_dump(mode="json", exclude={"snapshots"}))

    def config_hash(self) -> str:
        """A stable digest of every setting; equal configs hash equal on every machine."""
        return stable_hex(self.canonical_json())


def _describe(error: ValidationError, source: str) -> str:
    lines = [f"{source}: invalid configuration"]
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(top level)"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown field; remove it or check its spelling against docs/configuration.md"
        got = redact(item.get("input"), str(item["loc"][-1]) if item["loc"] else "")
        lines.append(f"  {where}: {message}" + ("" if isinstance(got, dict) else f" (got {got!r})"))
    return "\n".join(lines)


def parse_config(data: object, source: str = "corpus.yaml") -> CorpusConfig:
    """Validate an already-parsed mapping; raise :class:`ConfigError` naming every bad field."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of settings")
    try:
        return CorpusConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_describe(error, source)) from None


def load_config(path: Path) -> CorpusConfig:
    """Read and validate a corpus.yaml file."""
    if not path.is_file():
        raise ConfigError(
            f"{path}: config file not found; create it (see docs/configuration.md) or pass --config"
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    return parse_config(data, str(path))
