"""The ``statistics`` and ``licenses`` sections of corpus.yaml: how long a statistics fit is
kept and when new rows drift from it, and the licence of every row."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StatisticsConfig(_Model):
    """What ``fitted_statistics`` computes beyond the moments, how long a fit is kept and when
    the train rows added since drift too far from it.

    A fit is kept (and every row normalized with it) while ``epoch`` and the settings that shape
    it stay and the split is an anchored group split; raise ``epoch`` to refit. ``drift_warn``
    and ``drift_block`` are population stability index thresholds over the fitted histogram
    bins: above the first the drift check warns in the UI, above the second (off when null) it
    blocks."""

    histogram_bins: Annotated[int, Field(ge=1, le=1000)] = 10
    top_k_tokens: Annotated[int, Field(ge=0, le=100_000)] = 50
    epoch: Annotated[int, Field(ge=0)] = 0
    drift_warn: Annotated[float, Field(gt=0)] = 0.1
    drift_block: Annotated[float, Field(gt=0)] | None = None

    @model_validator(mode="after")
    def _ordered(self) -> StatisticsConfig:
        if self.drift_block is not None and self.drift_block < self.drift_warn:
            raise ValueError("statistics.drift_block must be at least statistics.drift_warn")
        return self


class LicensesConfig(_Model):
    """The licence of every row, and the licences no release may contain.

    A row's licence is its ``license`` input column (``input.columns.license``) where that is
    set, else its source's entry in ``sources``, else ``unknown``. ``deny`` lists licences (and
    may list ``unknown``) that fail ``split_documents``' blocking check
    ``no_denied_license_in_splits``, naming the offending rows."""

    sources: dict[str, str] = Field(default_factory=dict)
    deny: tuple[str, ...] = ()

    @field_validator("sources")
    @classmethod
    def _named(cls, sources: dict[str, str]) -> dict[str, str]:
        empty = sorted(s for s, licence in sources.items() if not licence.strip())
        if empty:
            raise ValueError(f"licenses.sources {empty}: name a licence (an SPDX id) or remove")
        return sources
