"""The three regressions seed 001 pinned after its discarded best-first design."""

import pytest

from cortex_agents.memory import Query, WalkSpec, Weights
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.reference import query_reference, walk_candidates
from tests.support.helpers import node, snapshot

ENGINES = [query_reference, query_vectorised]


@pytest.mark.parametrize("engine", ENGINES)
def test_origin_and_out_of_scope_nodes_never_rank(engine):
    # `near` is pending and one hop away: under the old sentinel bug it sorted first.
    snap = snapshot(
        [
            node("root", minute=0),
            node("near", status="pending", minute=59),
            node("far", minute=1),
            node("origin", minute=59),
        ],
        [("root", "far"), ("far", "near"), ("near", "origin")],
    )
    ranked = engine(snap, "origin", WalkSpec())
    assert [m.node_id for m in ranked] == ["far", "root"]
    assert all(m.status == "completed" for m in ranked)
    debug = engine(snap, "origin", WalkSpec(scope="debug_all_statuses"))
    assert debug[0].node_id == "near"
    assert "origin" not in {m.node_id for m in debug}


@pytest.mark.parametrize("engine", ENGINES)
def test_limit_one_returns_the_global_best_not_the_best_first_frontier(engine):
    # origin -> a -> b, origin -> c with score(b) > score(c) > score(a).
    # Best-first expands origin, sees {a, c}, takes c. The global best is b.
    snap = snapshot(
        [
            node("origin", minute=0),
            node("a", minute=0),  # oldest: lowest temporal
            node("b", minute=59),  # newest
            node("c", minute=30),
        ],
        [("origin", "a"), ("a", "b"), ("origin", "c")],
    )
    spec = WalkSpec(direction="descendants", weights=Weights(graph=0, temporal=1, semantic=0))
    full = engine(snap, "origin", spec)
    assert [m.node_id for m in full] == ["b", "c", "a"]
    assert full[0].score > full[1].score > full[2].score
    limited = engine(snap, "origin", WalkSpec(**{**_fields(spec), "limit": 1}))
    assert [m.node_id for m in limited] == ["b"]


def _fields(spec: WalkSpec) -> dict:
    return {f: getattr(spec, f) for f in spec.__dataclass_fields__}


@pytest.mark.parametrize("engine", ENGINES)
def test_bidirectional_never_alternates_directions(engine):
    # From A over A -> B <- C: B is a descendant of A, C is not related to A.
    snap = snapshot(["A", "B", "C"], [("A", "B"), ("C", "B")])
    assert walk_candidates(snap, "A", "bidirectional") == {"B": 1}
    ranked = engine(snap, "A", WalkSpec(direction="bidirectional"), Query())
    assert [m.node_id for m in ranked] == ["B"]


def test_bidirectional_is_the_union_of_both_cones():
    # In a DAG the two cones are disjoint; bidirectional returns both, each with its own hops.
    snap = snapshot(["U", "O", "X", "Y"], [("U", "O"), ("O", "X"), ("X", "Y")])
    assert walk_candidates(snap, "O", "bidirectional") == {"U": 1, "X": 1, "Y": 2}
    assert walk_candidates(snap, "O", "ancestors") == {"U": 1}
    assert walk_candidates(snap, "O", "descendants") == {"X": 1, "Y": 2}
