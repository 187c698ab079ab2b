"""Properties of the pipeline on random DAGs (hypothesis).

The strongest one: the vectorised engine and the reference agree exactly —
same ranking, same floats — which is what lets rankings agree on ties.
"""

from __future__ import annotations

import dataclasses
import random
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex_agents.memory import (
    BM25,
    Blend,
    EmbeddingScorer,
    MemoryHandle,
    MemorySnapshot,
    Query,
    WalkSpec,
    Weights,
    token_jaccard,
)
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.reference import query_reference
from cortex_agents.substrate import NodeRecord
from tests.support.embedding import HashEmbedder
from tests.support.helpers import T0

IDS = [
    "a",
    "B",
    "c",
    "é",
    "a1",
    "a-2",
    "Z",
    "zz",
    "m",
    "n",
    "ö",
    "p",
    "q",
    "r",
    "s",
    "t",
    "u",
    "v",
    "w",
    "x",
]
KINDS = ["planner", "analyst", "merge", "reviewer"]
WORDS = ["bias", "trial", "gain", "survey", "focus", "remote", "claim", "risk", "HD 23", "2011–12",
         "Finland", "Eurovision Contest. Remote"]  # fmt: skip
KEYS = ["c1", "c2", "c3"]
EVIDENCE = ["Bias (survey)", "trial gain", "HD 23", "x", "Remote Claim"]


@st.composite
def outputs(draw):
    words = draw(st.lists(st.sampled_from(WORDS), max_size=5))
    value = {"finding": " ".join(words)}
    if draw(st.booleans()):  # evidence a query or another body may name
        value["evidence"] = draw(st.lists(st.sampled_from(EVIDENCE), max_size=2))
    if draw(st.booleans()):
        value["claim_ref"] = draw(st.sampled_from(KEYS))
    shape = draw(st.sampled_from(["plain", "envelope", "values", "none"]))
    if shape == "envelope":
        return {"contract": "x", "value": value}
    if shape == "values":
        return {"values": [{"contract": "x", "value": value}]}
    return None if shape == "none" else value


@st.composite
def snapshots(draw, max_nodes=20):
    n = draw(st.integers(1, max_nodes))
    ids = draw(st.permutations(IDS))[:n]  # position in `ids` is a topological order
    density = draw(st.sampled_from([0.0, 0.15, 0.35, 0.7]))
    rng = random.Random(draw(st.integers(0, 2**32)))
    edges = [(ids[i], ids[j]) for j in range(n) for i in range(j) if rng.random() < density]
    nodes = []
    for node_id in ids:
        status = draw(
            st.sampled_from(["completed", "completed", "completed", "pending", "running", "failed"])
        )
        captured = T0 + timedelta(microseconds=draw(st.integers(0, 10**10)))
        completed = None
        if status == "completed" and draw(st.booleans()):
            completed = captured + timedelta(microseconds=draw(st.integers(0, 10**9)))
        nodes.append(
            NodeRecord(
                id=node_id,
                kind=draw(st.sampled_from(KINDS)),
                status=status,
                captured_at=captured,
                completed_at=completed,
                output=draw(outputs()) if status == "completed" else None,
            )
        )
    reference = T0 + timedelta(microseconds=draw(st.integers(0, 2 * 10**10)))
    rng.shuffle(nodes)
    rng.shuffle(edges)
    return MemorySnapshot.of(nodes, edges, reference)


@st.composite
def specs(draw):
    weights = draw(
        st.sampled_from(
            [
                Weights(),
                Weights(graph=1.5),
                Weights(temporal=1.5),
                Weights(graph=1, temporal=0, semantic=0),
                Weights(graph=0, temporal=1, semantic=0),
                Weights(graph=0.3, temporal=0.0, semantic=2.0),
            ]
        )
    )
    return WalkSpec(
        direction=draw(st.sampled_from(["ancestors", "descendants", "bidirectional"])),
        scope=draw(st.sampled_from(["settled_only", "debug_all_statuses"])),
        max_distance=draw(st.none() | st.integers(1, 4)),
        limit=draw(st.none() | st.integers(1, 6)),
        weights=weights,
        prior=draw(st.sampled_from(["influence", "hop_decay"])),
        alpha=draw(st.sampled_from([0.85, 0.5, 1.0, 0.0, 0.333])),
        time_scale=draw(st.sampled_from([3600.0, 1.0, 86400.0])),
        past_boundary=draw(st.none() | st.sampled_from(KINDS)),
        time_reference=draw(st.sampled_from(["snapshot", "newest"])),
        support=draw(st.sampled_from([0.0, 0.0, 0.6, 1.0])),
        named_evidence=draw(st.sampled_from([0.0, 0.0, 0.2, 1.0])),
        bridge=draw(st.sampled_from([0.0, 0.0, 0.15, 1.0])),
        feedback=draw(st.sampled_from([0.0, 0.0, 0.5, 1.0])),
        feedback_depth=draw(st.integers(1, 3)),
        distinct_bodies=draw(st.booleans()),
        diversity=draw(st.sampled_from([None, None, "mmr"])),
        mmr_lambda=draw(st.sampled_from([0.9, 0.5, 0.1, 1.0])),
        mmr_depth=draw(st.integers(1, 8)),
    )


_EMBEDDING = EmbeddingScorer(HashEmbedder())
# Jaccard (inverted index), an embedding scorer (cached matrix), BM25 over either corpus
# (postings and the index's statistics), blends of them (parts vectorised one by one): each
# must give the reference's floats exactly.
SCORERS = [
    token_jaccard,
    _EMBEDDING,
    Blend([(_EMBEDDING, 1.0), (token_jaccard, 0.5)]),
    BM25(),
    BM25(corpus="view", k1=0.9, b=0.4),
    BM25(k1=0.0, b=1.0),
    Blend([(BM25(), 1.0), (_EMBEDDING, 2.0)]),
]


@st.composite
def queries(draw):
    return Query(
        text=draw(
            st.none()
            | st.sampled_from(
                [
                    "bias",
                    "trial gain",
                    "remote claim risk",
                    "",
                    "zzz",
                    "HD23 2011-2012",
                    "finland gain",
                ]
            )
        ),
        routing_key=draw(st.none() | st.sampled_from([*KEYS, "analyst"])),
        kinds=draw(st.none() | st.sets(st.sampled_from(KINDS), max_size=2)),
        exclude_kinds=draw(st.sets(st.sampled_from(KINDS), max_size=2)),
        scorer=draw(st.sampled_from(SCORERS)),
    )


def cases():
    return st.tuples(snapshots(), specs(), queries(), st.data())


def origin_of(data, snap: MemorySnapshot) -> str:
    return data.draw(st.sampled_from(sorted(snap.nodes)))


def rows(matches):
    return [
        (m.node_id, m.hops, m.score, m.graph, m.temporal, m.semantic, m.routing_key)
        for m in matches
    ]


FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(cases())
def test_vectorised_equals_reference_exactly(case):
    snap, spec, query, data = case
    origin = origin_of(data, snap)
    expected = query_reference(snap, origin, spec, query)
    actual = query_vectorised(snap, origin, spec, query)
    assert [m.node_id for m in actual] == [m.node_id for m in expected]
    for got, want in zip(actual, expected, strict=True):
        assert abs(got.score - want.score) <= 1e-12
    assert rows(actual) == rows(expected)  # stronger: identical floats


@FAST
@given(cases())
def test_same_input_same_output(case):
    snap, spec, query, data = case
    origin = origin_of(data, snap)
    assert rows(query_vectorised(snap, origin, spec, query)) == rows(
        query_vectorised(snap, origin, spec, query)
    )
    assert rows(query_reference(snap, origin, spec, query)) == rows(
        query_reference(snap, origin, spec, query)
    )


@FAST
@given(cases(), st.randoms(use_true_random=False))
def test_input_order_of_nodes_and_edges_does_not_matter(case, rng):
    snap, spec, query, data = case
    origin = origin_of(data, snap)
    nodes = list(snap.nodes.values())
    edges = list(snap.edges)
    rng.shuffle(nodes)
    rng.shuffle(edges)
    shuffled = MemorySnapshot.of(nodes, edges, snap.captured_at)
    assert rows(query_vectorised(shuffled, origin, spec, query)) == rows(
        query_vectorised(snap, origin, spec, query)
    )
    assert rows(query_reference(shuffled, origin, spec, query)) == rows(
        query_reference(snap, origin, spec, query)
    )


@FAST
@given(cases())
def test_scores_and_axes_are_in_unit_interval(case):
    snap, spec, query, data = case
    for m in query_vectorised(snap, origin_of(data, snap), spec, query):
        for value in (m.score, m.graph, m.temporal, m.semantic):
            assert 0.0 <= value <= 1.0


@FAST
@given(cases(), st.integers(1, 8))
def test_limit_k_is_the_first_k_of_the_unlimited_ranking(case, k):
    snap, spec, query, data = case
    origin = origin_of(data, snap)
    unlimited = query_vectorised(snap, origin, dataclasses.replace(spec, limit=None), query)
    limited = query_vectorised(snap, origin, dataclasses.replace(spec, limit=k), query)
    assert rows(limited) == rows(unlimited[:k])


@FAST
@given(cases())
def test_memoised_handle_returns_what_a_fresh_computation_returns(case):
    snap, spec, query, data = case
    origin = origin_of(data, snap)
    handle = MemoryHandle(snap, origin)
    first = handle.query(spec, query)
    computed = handle.influence_computations
    for _ in range(3):
        assert rows(handle.query(spec, query)) == rows(first)
    assert handle.influence_computations == computed  # served from the memo
    fresh = query_vectorised(
        MemorySnapshot.of(snap.nodes.values(), snap.edges, snap.captured_at), origin, spec, query
    )
    assert rows(first) == rows(fresh)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(["ancestors", "descendants", "bidirectional"]))
def test_engines_agree_on_larger_random_dags(seed, direction):
    rng = random.Random(seed)
    n = 300
    ids = [f"n{i:03d}" for i in range(n)]
    rng.shuffle(ids)
    edges = set()
    for j in range(1, n):
        for _ in range(rng.randint(1, 4)):
            edges.add((ids[rng.randrange(max(0, j - 30), j)], ids[j]))
    nodes = [
        NodeRecord(
            id=node_id,
            kind=rng.choice(KINDS),
            status="completed",
            captured_at=T0 + timedelta(seconds=i),
            completed_at=T0 + timedelta(seconds=i + rng.random()),
            output={"finding": " ".join(rng.sample(WORDS, 3)), "evidence": rng.sample(EVIDENCE, 1)},
        )
        for i, node_id in enumerate(ids)
    ]
    snap = MemorySnapshot.of(nodes, sorted(edges), T0 + timedelta(seconds=n + 5))
    origin = ids[n // 2]
    spec = WalkSpec(direction=direction, alpha=rng.choice([0.85, 0.99]))
    for query in (Query(text="bias trial"), Query(text="HD 23 trial", scorer=BM25())):
        assert rows(query_vectorised(snap, origin, spec, query)) == rows(
            query_reference(snap, origin, spec, query)
        )
    # the shipped shape: hop decay, newest-relative recency, edge support, a lexical+dense blend
    spec = WalkSpec(
        direction=direction, prior="hop_decay", time_reference="newest", support=0.6,
        named_evidence=0.2, bridge=0.15, distinct_bodies=True,
        weights=Weights(graph=0.25, temporal=0.25, semantic=1.0),
    )  # fmt: skip
    query = Query(text="2011-12 survey gain", scorer=Blend([(BM25(), 1.0), (_EMBEDDING, 2.0)]))
    assert rows(query_vectorised(snap, origin, spec, query)) == rows(
        query_reference(snap, origin, spec, query)
    )
    # and with the opt-in feedback pass on top (Topological(second_pass="feedback"))
    spec = dataclasses.replace(spec, feedback=1.0, feedback_depth=rng.choice([1, 2]))
    assert rows(query_vectorised(snap, origin, spec, query)) == rows(
        query_reference(snap, origin, spec, query)
    )
    # and the opt-in diversity stage (Topological(diversity="mmr")), with and without a limit
    for limit in (None, rng.choice([1, 3, 10])):
        spec = dataclasses.replace(
            spec, diversity="mmr", mmr_lambda=rng.choice([0.9, 0.5]), limit=limit
        )
        assert rows(query_vectorised(snap, origin, spec, query)) == rows(
            query_reference(snap, origin, spec, query)
        )
