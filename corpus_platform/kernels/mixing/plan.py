"""The plan of the training mix: each source's target share and draw rate, in one unit.

The unit (``mix.unit``) is documents or tokens; ``available`` holds each source's documents or
tokens in the decontaminated train split, and every quantity below is in that unit.

- **Shares.** Explicit ``mix.proportions``, or else each source's share is proportional to
  ``n_i ** (1 / T)`` (``mix.temperature`` T; 1 keeps the natural shares of train, larger T
  flattens toward uniform). Temperature applies only without proportions (the config refuses
  both).
- **Total.** ``mix.total_rows`` / ``mix.total_tokens``, or else the largest mix that repeats no
  source (some source drawn exactly once, every other at most once).
- **Rate.** ``target_i / n_i``; a row is drawn ``floor(rate)`` times plus once more on a seeded
  coin (:func:`kernels.mixing.mix.times_drawn`), so a source's expected draws are its
  target and its expected epochs (draws / available) its rate.
- **Caps** (``mix.max_epochs``). With explicit proportions a source that needs more epochs than
  its cap is an error naming the source, the needed and the allowed epochs: the proportions are a
  contract. Without proportions the capped source is held at its cap and what it cannot supply
  goes to the other sources in proportion to their shares, repeatedly (UniMax, Chung et al.
  2023); when every source is capped and the total is still out of reach, it is an error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from corpus_platform.base.errors import CorpusError

SNAP = 1e-9  # rates this close to an integer are that integer (float noise, not a coin)


class MixError(CorpusError):
    """Mix settings that the train split cannot satisfy."""


@dataclass(frozen=True)
class MixPlan:
    """What the mix draws, per source (every dict sorted by source).

    Attributes:
        unit: ``documents`` or ``tokens``.
        available: Units per source in the decontaminated train split.
        shares: Target share of the mix per source (after caps; sums to 1).
        rates: Expected draws per available row (= expected epochs).
        total: Target size of the mix in units.
        capped: Sources held at their ``max_epochs`` cap.
    """

    unit: str
    available: dict[str, int]
    shares: dict[str, float]
    rates: dict[str, float]
    total: float
    capped: tuple[str, ...] = ()


def temperature_shares(available: Mapping[str, int], temperature: float) -> dict[str, float]:
    """Each source's share ``n_i ** (1/T) / sum_j n_j ** (1/T)`` (sources with nothing: 0)."""
    if temperature <= 0:
        raise MixError(f"mix.temperature must be positive, got {temperature}")
    weights = {s: (n ** (1.0 / temperature) if n > 0 else 0.0) for s, n in available.items()}
    total = math.fsum(weights.values())
    if total <= 0:
        raise MixError("the train split has nothing to draw from: every source is empty")
    return {s: w / total for s, w in sorted(weights.items())}


def epoch_caps(
    max_epochs: float | Mapping[str, float] | None, available: Mapping[str, int]
) -> dict[str, float]:
    """The cap of every capped source: a scalar caps all, a mapping the sources it names."""
    if max_epochs is None:
        return {}
    if not isinstance(max_epochs, Mapping):
        return dict.fromkeys(sorted(available), float(max_epochs))
    unknown = sorted(s for s in max_epochs if available.get(s, 0) == 0)
    if unknown:
        raise MixError(
            f"mix.max_epochs names source(s) {unknown} with no train rows; "
            f"available sources: {sorted(available)}"
        )
    return {s: float(c) for s, c in sorted(max_epochs.items())}


def plan_mix(
    available: Mapping[str, int],
    *,
    unit: str = "documents",
    proportions: Mapping[str, float] | None = None,
    total: int | None = None,
    temperature: float = 1.0,
    max_epochs: float | Mapping[str, float] | None = None,
) -> MixPlan:
    """The plan for ``available`` units per source (see the module docstring).

    Raises:
        MixError: a proportion names a source with nothing in train, a cap cannot be met, or
            ``max_epochs`` names an unknown source. The message names the field and the fix.
    """
    available = dict(sorted(available.items()))
    caps = epoch_caps(max_epochs, available)
    if proportions:
        return _explicit(available, unit, dict(proportions), total, caps)
    if temperature == 1.0 and total is None:  # every row once, exactly (the historical plan)
        size = sum(available.values())
        shares = {s: n / (size or 1) for s, n in available.items()}
        return MixPlan(unit, available, shares, dict.fromkeys(available, 1.0), float(size))
    shares = temperature_shares(available, temperature)
    if total is None:
        size = min(available[s] / p for s, p in shares.items() if p > 0)
        return _plan(unit, available, {s: size * p for s, p in shares.items()}, size, ())
    targets, capped = _water_fill(available, shares, caps, total, unit)
    return _plan(unit, available, targets, float(total), capped)


def _explicit(
    available: dict[str, int],
    unit: str,
    proportions: dict[str, float],
    total: int | None,
    caps: dict[str, float],
) -> MixPlan:
    missing = sorted(s for s, p in proportions.items() if p > 0 and available.get(s, 0) == 0)
    if missing:
        raise MixError(
            f"mix.proportions names source(s) {missing} with no train "
            f"{'rows' if unit == 'documents' else 'tokens'}; available sources: {sorted(available)}"
        )
    wanted = {s: p for s, p in proportions.items() if p > 0}
    size = total or math.floor(min(available[s] / p for s, p in wanted.items()))
    # the historical arithmetic, kept exactly: documents-mode outputs do not change
    rates = {s: (size * wanted.get(s, 0.0) / n if n else 0.0) for s, n in available.items()}
    for source, rate in rates.items():
        if source in caps and rate > caps[source] + SNAP:
            raise MixError(
                f"mix.max_epochs: source {source!r} needs {rate:.4g} epochs to reach "
                f"mix.proportions.{source} = {wanted[source]:g} of {size} {unit} "
                f"({available[source]} {unit} available) but {caps[source]:g} are allowed; raise "
                f"its mix.max_epochs, lower {_total_field(unit)} or lower its proportion"
            )
    shares = {s: wanted.get(s, 0.0) for s in sorted({*available, *proportions})}
    return MixPlan(unit, available, shares, rates, float(size))


def _water_fill(
    available: dict[str, int],
    shares: dict[str, float],
    caps: dict[str, float],
    total: int,
    unit: str,
) -> tuple[dict[str, float], tuple[str, ...]]:
    """Targets summing to ``total``: capped sources at their cap, the rest by share."""
    fixed: dict[str, float] = {}
    while True:
        free = {s: p for s, p in shares.items() if s not in fixed and p > 0}
        left = total - math.fsum(fixed.values())
        weight = math.fsum(free.values())
        if not free:
            most = math.fsum(caps[s] * available[s] for s in fixed)
            raise MixError(
                f"{_total_field(unit)}: {total} {unit} need more repetitions than mix.max_epochs "
                f"allow: at most {most:.0f} {unit} ("
                + ", ".join(f"{s}: {caps[s]:g} x {available[s]}" for s in sorted(fixed))
                + f"); raise mix.max_epochs or lower {_total_field(unit)}"
            )
        # over its cap by more than float noise: a total of exactly every cap is reachable
        over = [
            s
            for s, p in free.items()
            if left * p / weight > caps.get(s, math.inf) * available[s] * (1 + SNAP)
        ]
        if not over:
            break
        fixed |= {s: caps[s] * available[s] for s in over}
    targets = {s: fixed.get(s, left * free.get(s, 0.0) / weight) for s in shares}
    return targets, tuple(sorted(fixed))


def _plan(
    unit: str,
    available: dict[str, int],
    targets: dict[str, float],
    size: float,
    capped: tuple[str, ...],
) -> MixPlan:
    rates = {s: _snap(targets.get(s, 0.0) / n) if n else 0.0 for s, n in available.items()}
    shares = {s: targets.get(s, 0.0) / size for s in available}
    return MixPlan(unit, available, shares, rates, size, capped)


def _snap(rate: float) -> float:
    nearest = round(rate)
    return float(nearest) if abs(rate - nearest) <= SNAP else rate


def _total_field(unit: str) -> str:
    return "mix.total_rows" if unit == "documents" else "mix.total_tokens"
