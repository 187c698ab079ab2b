"""A deterministic layered layout of a :class:`~cortex_agents.picture.Picture`.

Layers are longest paths from the sources (a source is layer 0; every edge
goes from a lower layer to a higher one). Within a layer, nodes are ordered
by a barycenter heuristic — alternating downward and upward sweeps that move
each node towards the mean position of its neighbours — with ties broken by
scheduling order. Retired nodes have no edges; they are set apart in a row of
their own, in scheduling order.

Positions are compared as exact fractions, so the same picture always yields
the same layout, whatever the platform.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from cortex_agents.errors import CycleError, InvalidArgument
from cortex_agents.picture._model import Picture

__all__ = ["SWEEPS", "Layout", "layout"]

SWEEPS: Final = 4
"""Down-and-up barycenter sweeps (a few settle small workflow graphs)."""


@dataclass(frozen=True, slots=True)
class Layout:
    """Where each node goes: live nodes by layer, retired nodes apart.

    Attributes:
        layers: Live node ids per layer, top (sources) first, each in drawing order.
        retired: Retired node ids, in scheduling order.
    """

    layers: tuple[tuple[str, ...], ...]
    retired: tuple[str, ...]

    def layer_of(self) -> dict[str, int]:
        """Each live node's layer."""
        return {n: i for i, layer in enumerate(self.layers) for n in layer}

    def position_of(self) -> dict[str, tuple[int, int]]:
        """Each live node's ``(layer, index within the layer)``."""
        return {n: (i, j) for i, layer in enumerate(self.layers) for j, n in enumerate(layer)}


def _longest_path_layers(
    live: list[str], preds: Mapping[str, list[str]], succs: Mapping[str, list[str]]
) -> dict[str, int]:
    indegree = {n: len(preds[n]) for n in live}
    ready = [(i, n) for i, n in enumerate(live) if indegree[n] == 0]
    heapq.heapify(ready)
    rank = {n: i for i, n in enumerate(live)}
    layer = dict.fromkeys(live, 0)
    done = 0
    while ready:
        _, node = heapq.heappop(ready)
        done += 1
        for nxt in succs[node]:
            layer[nxt] = max(layer[nxt], layer[node] + 1)
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                heapq.heappush(ready, (rank[nxt], nxt))
    if done != len(live):  # the substrate is a DAG by construction; never hang on bad input
        raise CycleError(_one_cycle([n for n in live if indegree[n] > 0], preds, indegree))
    return layer


def _one_cycle(
    stuck: list[str], preds: Mapping[str, list[str]], indegree: Mapping[str, int]
) -> list[str]:
    """A cycle among the nodes layering could not reach, first id repeated at the end.

    Each of them keeps a predecessor that is also stuck (else its indegree would
    have reached 0), so walking back through stuck predecessors must repeat a node.
    """
    seen: dict[str, int] = {}
    path: list[str] = []
    node = stuck[0]
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = next(p for p in preds[node] if indegree[p] > 0)
    cycle = path[seen[node] :]
    return [*reversed(cycle), cycle[-1]]


def _centred(layers: list[list[str]]) -> dict[str, Fraction]:
    """Positions with every layer centred on 0, so layers of different widths compare."""
    out: dict[str, Fraction] = {}
    for layer in layers:
        # Fractions, not floats: barycenters of centred positions tie exactly, and a
        # tie must fall to scheduling order, never to a rounding difference.
        offset = Fraction(len(layer) - 1, 2)
        for j, n in enumerate(layer):
            out[n] = j - offset
    return out


def _sweep(
    layers: list[list[str]],
    neighbours: Mapping[str, list[str]],
    rank: Mapping[str, int],
    indices: range,
) -> None:
    for i in indices:
        position = _centred(layers)
        layer = layers[i]

        def key(n: str, position: dict[str, Fraction] = position) -> tuple[Fraction, int]:
            near = neighbours[n]
            if not near:
                return position[n], rank[n]
            return sum((position[m] for m in near), Fraction(0)) / len(near), rank[n]

        layer.sort(key=key)


def layout(picture: Picture, *, sweeps: int = SWEEPS) -> Layout:
    """The layered layout of ``picture``.

    Args:
        picture: The render model.
        sweeps: How many down-and-up barycenter sweeps to run.

    Raises:
        CycleError: (a ``ValueError``) the live edges close a cycle.
        InvalidArgument: (a ``ValueError``) an edge names an unknown or retired node.
    """
    live = [n.id for n in picture.nodes if not n.retired]
    rank = {n.id: n.order for n in picture.nodes}
    preds: dict[str, list[str]] = {n: [] for n in live}
    succs: dict[str, list[str]] = {n: [] for n in live}
    for source, target in picture.edges:
        if source not in succs or target not in preds:
            raise InvalidArgument(
                "picture.edges", "must each join two live nodes", (source, target)
            )
        succs[source].append(target)
        preds[target].append(source)
    layer_of = _longest_path_layers(live, preds, succs)
    layers: list[list[str]] = [[] for _ in range(max(layer_of.values(), default=-1) + 1)]
    for n in live:  # scheduling order: the first sweep's starting order
        layers[layer_of[n]].append(n)
    for _ in range(sweeps):
        # Down (by predecessors, from the second layer) then up (by successors, from
        # the second-to-last): each sweep holds one neighbouring layer fixed.
        _sweep(layers, preds, rank, range(1, len(layers)))
        _sweep(layers, succs, rank, range(len(layers) - 2, -1, -1))
    return Layout(
        layers=tuple(tuple(layer) for layer in layers),
        retired=tuple(n.id for n in picture.nodes if n.retired),
    )
