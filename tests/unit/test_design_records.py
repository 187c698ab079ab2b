"""The regression tests behind the two design records in ``docs/`` (seed 001, F1 and F2).

* ``docs/adr-0001-enumeration-and-scoring-are-separate.md``: which nodes a
  query may return is decided by the walk and the filters alone; priors,
  weights, alpha, time scale and reference, edge support, entity signals,
  repeated bodies and query text only reorder them.
* ``docs/adr-0002-stop-at-k-needs-a-monotone-priority.md``: best-first
  enumeration that stops after ``k`` pops returns the global top ``k`` when
  the priority never increases along the walk (hop decay alone), and does
  not under the composite score — hypothesis finds the counterexample.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable

from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from cortex_agents.memory import MemorySnapshot, Query, WalkSpec, Weights
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.reference import walk_candidates
from tests.unit.test_properties import snapshots

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SCORING = st.fixed_dictionaries(
    {
        "weights": st.sampled_from(
            [Weights(), Weights(graph=1.5), Weights(graph=0, temporal=1, semantic=0)]
        ),
        "prior": st.sampled_from(["influence", "hop_decay"]),
        "alpha": st.sampled_from([0.85, 0.5, 0.0]),
        "time_scale": st.sampled_from([3600.0, 1.0]),
        "time_reference": st.sampled_from(["snapshot", "newest"]),
        "support": st.sampled_from([0.0, 0.6]),
        "named_evidence": st.sampled_from([0.0, 0.2]),
        "bridge": st.sampled_from([0.0, 0.15]),
        "distinct_bodies": st.booleans(),
    }
)


@SETTINGS
@given(snapshots(), st.data(), SCORING, SCORING, st.sampled_from([None, "bias", "trial gain"]))
def test_scoring_never_changes_which_nodes_are_candidates(snap, data, first, second, text):
    """ADR 0001: two queries that differ only in how they score return the same nodes and hops."""
    origin = data.draw(st.sampled_from(sorted(snap.nodes)))
    direction = data.draw(st.sampled_from(["ancestors", "descendants", "bidirectional"]))
    a = query_vectorised(snap, origin, WalkSpec(direction=direction, **first), Query())
    b = query_vectorised(snap, origin, WalkSpec(direction=direction, **second), Query(text=text))
    assert {(m.node_id, m.hops) for m in a} == {(m.node_id, m.hops) for m in b}
    settled = {n for n, r in snap.nodes.items() if r.status == "completed"}
    walked = walk_candidates(snap, origin, direction)
    assert {m.node_id: m.hops for m in a} == {n: h for n, h in walked.items() if n in settled}


def test_the_walk_spec_has_no_enumeration_algorithm_knob():
    """ADR 0001: seed 001 removed `WalkAlgorithm`; enumeration is BFS, with no switch to add back."""
    fields = {f.name for f in dataclasses.fields(WalkSpec)}
    assert not {"algorithm", "walk_algorithm", "enumerator"} & fields


def _best_first(snap: MemorySnapshot, origin: str, spec: WalkSpec, k: int) -> list[str]:
    """Expand the highest-priority node first and stop after ``k`` settled pops (seed 001's PFS).

    The priority of a node is its score in the full ranking, as the
    discarded design used it, with the same tie-break as the sort.
    """
    full = query_vectorised(snap, origin, dataclasses.replace(spec, scope="debug_all_statuses"))
    key = {m.node_id: (-m.score, m.hops, m.node_id) for m in full}
    successors: dict[str, list[str]] = {}
    for edge in snap.edges:
        source, target = (
            (edge.source, edge.target)
            if spec.direction == "descendants"
            else (edge.target, edge.source)
        )
        successors.setdefault(source, []).append(target)
    heap = [key[n] for n in successors.get(origin, ()) if n in key]
    heapq.heapify(heap)
    seen = {origin, *(item[2] for item in heap)}
    out: list[str] = []
    while heap and len(out) < k:
        _, _, node_id = heapq.heappop(heap)
        if snap.nodes[node_id].status == "completed":
            out.append(node_id)
        for nxt in successors.get(node_id, ()):
            if nxt not in seen and nxt in key:
                seen.add(nxt)
                heapq.heappush(heap, key[nxt])
    return out


def _agrees(spec: WalkSpec) -> Callable[[tuple], bool]:
    def check(case: tuple) -> bool:
        snap, origin_index, k = case
        origin = sorted(snap.nodes)[origin_index % len(snap.nodes)]
        top = [
            m.node_id for m in query_vectorised(snap, origin, dataclasses.replace(spec, limit=k))
        ]
        return _best_first(snap, origin, spec, k) == top

    return check


CASES = st.tuples(snapshots(max_nodes=12), st.integers(0, 11), st.integers(1, 4))
MONOTONE = WalkSpec(
    direction="descendants", prior="hop_decay", weights=Weights(graph=1, temporal=0, semantic=0)
)
COMPOSITE = WalkSpec(direction="descendants", weights=Weights(graph=1, temporal=1, semantic=0))


@SETTINGS
@given(CASES)
def test_stop_at_k_is_exact_under_a_priority_that_never_increases_along_the_walk(case):
    """ADR 0002, sound case: hop decay alone never increases from a node to its successor."""
    assert _agrees(MONOTONE)(case)


def test_stop_at_k_under_the_composite_score_misses_the_global_top_k():
    """ADR 0002, unsound case: recency can spike deep in the graph, so best-first stops too early."""
    counterexample = find(
        CASES,
        lambda case: not _agrees(COMPOSITE)(case),
        settings=settings(max_examples=2000, database=None, deadline=None),
    )
    snap, origin_index, k = counterexample
    origin = sorted(snap.nodes)[origin_index % len(snap.nodes)]
    top = query_vectorised(snap, origin, dataclasses.replace(COMPOSITE, limit=k))
    assert _best_first(snap, origin, COMPOSITE, k) != [m.node_id for m in top]
