"""The mix check's own target shares: each source's share of the mix as the ``mix`` settings
define it, computed without the stage's planner (:mod:`.plan`).

``mix_proportions_within_tolerance`` judges the published mix against these targets. Taking
them from the planner would let a fault there (a temperature applied twice, a cap met in the
wrong order) set both the draw and the expectation it is judged by, so the check computes them
from the definition, by another route:

- explicit ``mix.proportions``: the proportions themselves;
- else weights ``n_i ** (1 / T)`` of the sources with units (``mix.temperature`` T);
- without ``mix.total_*`` the mix repeats nothing, so the caps (at least one epoch each) never
  bind and the shares are the normalized weights;
- with a total, the water level: sources are visited in the order in which a rising level
  reaches their cap (``cap_i * n_i / w_i``); one whose share of what is left (re-summed at
  every step) exceeds its cap is held at the cap, the first that does not, or the last source,
  ends the visit and every source from it on shares what is left by weight. A total above
  every cap together is refused first. The planner instead fixes every capped source of a round
  at once and repeats; both find the one level at which the targets sum to the total.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from corpus_platform.base.errors import CorpusError

RELATIVE_NOISE = 1e-9  # a total this close to every cap's units together is reachable


class ShareError(CorpusError):
    """Mix settings whose target shares the train split cannot give."""


def target_shares(
    available: Mapping[str, int],
    *,
    proportions: Mapping[str, float] | None = None,
    total: int | None = None,
    temperature: float = 1.0,
    max_epochs: float | Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Each source's target share of the mix (sorted by source; sources without units: 0).

    Raises:
        ShareError: no source has units, or every source is held at its cap short of ``total``.
    """
    if proportions:
        return {s: float(proportions.get(s, 0.0)) for s in sorted({*available, *proportions})}
    weights = {s: n ** (1.0 / temperature) for s, n in sorted(available.items()) if n > 0}
    if not weights:
        raise ShareError("the train split has nothing to draw from: every source is empty")
    if total is None:
        whole = math.fsum(weights.values())
        return {s: weights.get(s, 0.0) / whole for s in sorted(available)}
    caps = _cap_units(available, weights, max_epochs)
    most = math.fsum(caps.values())
    if total > most * (1 + RELATIVE_NOISE):
        raise ShareError(
            f"{total} units need more repetitions than mix.max_epochs allow "
            f"({most:.0f} units at most)"
        )
    order = sorted(weights, key=lambda s: (caps[s] / weights[s], s))
    held: dict[str, float] = {}
    for at, source in enumerate(order):
        rest = order[at:]
        left = total - math.fsum(held.values())
        level = left / math.fsum(weights[s] for s in rest)
        if len(rest) == 1 or level * weights[source] <= caps[source]:
            break
        held[source] = caps[source]
    targets = {**held, **{s: level * weights[s] for s in rest}}
    return {s: targets.get(s, 0.0) / total for s in sorted(available)}


def _cap_units(
    available: Mapping[str, int],
    weights: Mapping[str, float],
    max_epochs: float | Mapping[str, float] | None,
) -> dict[str, float]:
    """Every weighted source's most units: its cap times its units, unbounded when uncapped."""
    if max_epochs is None:
        return dict.fromkeys(weights, math.inf)
    if isinstance(max_epochs, Mapping):
        return {s: max_epochs.get(s, math.inf) * available[s] for s in weights}
    return {s: float(max_epochs) * available[s] for s in weights}
