"""The three axes and the composite score, exactly as DESIGN §4 writes them.

Each axis is in [0, 1]; the score is their weighted mean::

    score = (w_graph * graph + w_temporal * temporal + w_semantic * semantic)
            / (w_graph + w_temporal + w_semantic)

Normalising by the weight sum (rather than clamping the sum to 1) keeps the
score in [0, 1] without saturating, so nearby nodes do not all tie at 1.0.
NaN counts as 0. Ages are integer microseconds, so the temporal axis is the
same float in every engine. The vectorised engine evaluates these same
expressions, in the same order, on arrays.
"""

from __future__ import annotations

import math

from cortex_agents.memory._spec import Weights

__all__ = ["MICROS_PER_SECOND", "clamp_axis", "composite_score", "hop_decay", "temporal_axis"]

MICROS_PER_SECOND = 1_000_000


def hop_decay(hops: int) -> float:
    """The ``hop_decay`` graph prior: ``1 / (1 + hops)``."""
    return 1.0 / (1 + hops)


def temporal_axis(age_micros: int, time_scale: float) -> float:
    """``1 / (1 + age / time_scale)`` with ``age`` never negative."""
    age = max(age_micros, 0) / MICROS_PER_SECOND
    return 1.0 / (1.0 + age / time_scale)


def clamp_axis(value: float) -> float:
    """NaN to 0, then clamp into [0, 1] (for pluggable scorers)."""
    if math.isnan(value):
        return 0.0
    return min(max(value, 0.0), 1.0)


def composite_score(weights: Weights, graph: float, temporal: float, semantic: float) -> float:
    """The weighted mean of the three axes."""
    return (
        weights.graph * graph + weights.temporal * temporal + weights.semantic * semantic
    ) / weights.total
