"""What a printed ranking's columns mean, and what decided its order (``demo``, ``memory query``).

Light on purpose (no runtime, no memory engine): ``memory query`` imports
it, and a command loads only what it uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = ["AXES", "NEAR_TIE", "column_legend", "order_note", "score_formula"]

AXES: Final = ("graph", "temporal", "semantic")

NEAR_TIE: Final = 0.05
"""Two scores less than this fraction of the higher one apart are a near-tie.

Naming the axis that "decided" a 0.004 gap would explain noise as a reason,
so a near-tie is said to be one instead. 5% is a reading convention, not a
measured noise level of any scorer.
"""


def score_formula(weights: Mapping[str, float]) -> str:
    """``score = (0.25·graph + 0.25·temporal + 1·semantic) / 1.5``."""
    total = sum(weights.values())
    terms = " + ".join(f"{weights[a]:g}·{a}" for a in AXES)
    return f"score = ({terms}) / {total:g}"


def column_legend(origin: str, prior: str | None) -> str:
    """One line: what ``hops`` and ``key`` are, and how ``graph`` follows from hops."""
    if prior == "hop_decay":
        graph = "graph = 1/(1 + hops)"
    elif prior == "influence":
        graph = f"graph = share of a random walk from {origin} (falls with hops)"
    else:
        graph = "graph = the graph axis"
    return f"hops = edges from {origin}; {graph}; key = the branch (routing key)"


def order_note(matches: Sequence[Mapping[str, Any]], weights: Mapping[str, float]) -> str:
    """What put the first match ahead of the second: a near-tie, or the axis that did most.

    The axis is the one with the largest weighted difference between the two.
    """
    if len(matches) < 2:
        return ""
    first, second = matches[0], matches[1]
    top, next_ = float(first["score"]), float(second["score"])
    if top - next_ < NEAR_TIE * abs(top):
        return (
            f"{first['node_id']} and {second['node_id']} are a near-tie: {top:.3f} vs "
            f"{next_:.3f}, under {NEAR_TIE:.0%} apart"
        )
    gaps = {a: weights[a] * (float(first[a]) - float(second[a])) for a in AXES}
    axis = max(gaps, key=lambda a: gaps[a])
    return (
        f"{first['node_id']} ranks above {second['node_id']} mostly on the {axis} axis "
        f"({float(first[axis]):.3f} vs {float(second[axis]):.3f})"
    )
