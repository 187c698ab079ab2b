"""The reference pipeline: the test oracle the memory engine is checked against.

Plain Python, obviously correct and slow: :func:`query_reference` ranks a
snapshot's nodes for an origin step by step as DESIGN §4 defines the query
(enumerate, graph axis, cut, filter, score, sort, limit), and the engine users
run — :meth:`~cortex_agents.memory.MemoryHandle.query` over the vectorised
index in :mod:`cortex_agents.memory` — must give the same rankings and the same
floats, to the last bit. The property and exactness tests compare the two;
nothing in the library calls this package, and users never rank with it (it
walks the whole graph in Python on every call). A test suite that wants the
oracle finds :func:`query_reference` in :mod:`cortex_agents.testing` too.

It keeps the names of seed 001 (``src/Cortex/Pulse/Memory``): the walk
(:func:`walk_candidates`, :func:`direction_relations`, :func:`bfs_distance`;
``walkCandidates`` / ``directionRelations`` / ``bfsDistance``) in
:mod:`~cortex_agents.reference._walk`, and the query (:func:`query_reference`,
``pureQueryMemory``) in :mod:`~cortex_agents.reference._query`. The third seed
name, the influence (``dagRandomWalkInfluence``), stays in
:mod:`cortex_agents.memory._influence`: the engine orders its influence pass,
its snapshot files and its wires by that module's canonical order.

Imports point down: this package reads :mod:`cortex_agents.memory` and the
substrate records, and no layer below it imports it (``tests/unit/test_layering.py``).
"""

from cortex_agents.reference._query import beyond_boundary, query_reference, semantic_axes
from cortex_agents.reference._walk import (
    bfs_distance,
    direction_relations,
    relations_of,
    walk_candidates,
)

__all__ = [
    "beyond_boundary",
    "bfs_distance",
    "direction_relations",
    "query_reference",
    "relations_of",
    "semantic_axes",
    "walk_candidates",
]
