"""The ``mix`` section of corpus.yaml: how the training mix is drawn from train.

The planning itself (shares, temperature, caps, rates) is :mod:`kernels.mixing.plan`;
this model only refuses settings that contradict each other, naming the field and the fix.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

WHITESPACE = "whitespace"  # the default token counter: whitespace-separated words


class MixConfig(BaseModel):
    """Per-source proportions of the training mix, in documents or tokens.

    ``unit`` says what proportions, ``total_rows`` / ``total_tokens``, ``temperature`` and
    ``max_epochs`` measure: ``documents`` (rows) or ``tokens`` (counted by ``tokenizer``:
    ``whitespace`` words, or the path of a Hugging Face tokenizers JSON file inside the
    project). Without ``proportions`` each source's share is proportional to
    ``n_i ** (1 / temperature)`` (n_i its available units); ``temperature`` is refused next to
    explicit proportions. ``max_epochs`` (a number for every source, or ``{source: number}``)
    caps how often a source's units may be repeated (epochs = units drawn / units available).
    Within one ``epoch`` the rates are kept: an append draws its new rows at the published
    rates and leaves every published draw; raising ``epoch`` redraws the whole mix.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    unit: Literal["documents", "tokens"] = "documents"
    tokenizer: str = WHITESPACE
    proportions: dict[str, Annotated[float, Field(ge=0.0, le=1.0)]] = Field(default_factory=dict)
    temperature: Annotated[float, Field(gt=0.0, le=1000.0)] = 1.0
    total_rows: Annotated[int, Field(gt=0)] | None = None
    total_tokens: Annotated[int, Field(gt=0)] | None = None
    max_epochs: float | dict[str, float] | None = None
    tolerance: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.02
    epoch: Annotated[int, Field(ge=0)] = 0

    @field_validator("proportions")
    @classmethod
    def _sum(cls, proportions: dict[str, float]) -> dict[str, float]:
        total = sum(proportions.values())
        if proportions and abs(total - 1.0) > 1e-9:
            raise ValueError(f"proportions must sum to 1.0, got {total:g}")
        return proportions

    @field_validator("max_epochs", mode="before")
    @classmethod
    def _caps(cls, caps: object) -> object:
        if caps is None:
            return None
        values = caps if isinstance(caps, dict) else {"": caps}
        for name, cap in values.items():
            where = f": got {cap!r} for source {name!r}" if name else ""
            if isinstance(cap, bool) or not isinstance(cap, int | float):
                raise ValueError(
                    f"max_epochs is a number (every source) or {{source: number}}{where}"
                )
            if not cap >= 1.0:
                raise ValueError(
                    f"max_epochs must be at least 1 (1: a source's units at most once){where}; "
                    "to draw less of a source, lower its proportion"
                )
        return caps

    @field_validator("tokenizer")
    @classmethod
    def _named(cls, tokenizer: str) -> str:
        if not tokenizer.strip():
            raise ValueError("give `whitespace` or the path of a tokenizers JSON file")
        if PurePath(tokenizer).is_absolute():
            raise ValueError(
                "give the tokenizer file's path relative to the project folder: it is pinned "
                "with DVC with the mix it shaped (like evaluation sets); copy it into the project"
            )
        return tokenizer

    @model_validator(mode="after")
    def _consistent(self) -> MixConfig:
        if self.unit == "documents" and self.total_tokens is not None:
            raise ValueError(
                "mix.total_tokens counts tokens: set mix.unit: tokens, or give mix.total_rows"
            )
        if self.unit == "tokens" and self.total_rows is not None:
            raise ValueError(
                "mix.total_rows counts documents; with mix.unit: tokens give mix.total_tokens"
            )
        if self.unit == "documents" and self.tokenizer != WHITESPACE:
            raise ValueError(
                "mix.tokenizer is read only with mix.unit: tokens; set mix.unit: tokens or "
                "remove mix.tokenizer"
            )
        if self.temperature != 1.0 and self.proportions:
            raise ValueError(
                "mix.temperature sets the shares when mix.proportions is empty (share ~ "
                "n_i^(1/T)); give either mix.proportions or mix.temperature, not both"
            )
        return self

    @property
    def total(self) -> int | None:
        """The configured size of the mix in its unit (None: the largest without repeats)."""
        return self.total_tokens if self.unit == "tokens" else self.total_rows
