"""The incrementally kept memory index: every prefix view equals a from-scratch rebuild.

A run's branch keeps one memory index, extended by new events only; a stage's
snapshot reads a prefix view of it. These tests compare, after every step of
random runs (scheduling, edges added and removed by rewrites, failures and
retries, forks of older views), each view with an index built from scratch for
the fold of the same events — structurally and through the rankings both
engines compute from them, exactly (same floats).
"""

from __future__ import annotations

import random
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_agents.errors import InvalidEvent
from cortex_agents.memory import (
    EmbeddingScorer,
    MemorySnapshot,
    Query,
    WalkSpec,
    Weights,
    default_extractor,
    token_jaccard,
)
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.memory._fields import fields_index, fields_of
from cortex_agents.memory._index import MEMORY_INDEX, MemoryIndex
from cortex_agents.reference import query_reference
from cortex_agents.substrate import (
    EdgeAdded,
    EdgeRemoved,
    NodeScheduled,
    StageCompleted,
    StageStarted,
    SubstrateLog,
    fold,
)
from cortex_agents.substrate._branch import DERIVED, INDEX_ADJACENCY, INDEX_ASKED
from tests.support.embedding import HashEmbedder
from tests.support.helpers import T0
from tests.support.substrate import next_event, random_run

SCORER = EmbeddingScorer(HashEmbedder())
SPECS = [
    WalkSpec(
        direction=direction,
        prior=prior,
        scope=scope,
        weights=Weights(graph=1.0, temporal=0.5, semantic=1.0),
    )
    for direction in ("ancestors", "descendants", "bidirectional")
    for prior in ("influence", "hop_decay")
    for scope in ("settled_only", "debug_all_statuses")
]


def rows(matches):
    return [
        (
            m.node_id,
            m.status,
            m.hops,
            m.score,
            m.graph,
            m.temporal,
            m.semantic,
            m.routing_key,
            m.body_text,
            m.evidence,
            m.output,
        )
        for m in matches
    ]


def describe(snapshot: MemorySnapshot) -> dict:
    """Everything a view answers, by node id (ordinals may differ between indexes)."""
    view = snapshot.index
    nodes = np.arange(view.n, dtype=np.int64)
    ids = [view.node_id(i) for i in range(view.n)]
    fields = fields_of(view, default_extractor)
    labels = view.labels(nodes)
    walks = {}
    for i in range(view.n):
        for relation in ("ancestors", "descendants"):
            reached, hops = view.walk(relation, i)
            walks[ids[i], relation] = sorted(
                (view.node_id(int(v)), int(h)) for v, h in zip(reached, hops, strict=True)
            )
    kind_names = view.index.kind_names
    routing_keys = fields.fields.routing_keys
    return {
        "ids": sorted(ids),
        "by_label": [ids[i] for i in np.argsort(labels, kind="stable")],
        "settled": dict(zip(ids, view.settled(nodes).tolist(), strict=True)),
        "observed": dict(zip(ids, view.observed_us(nodes).tolist(), strict=True)),
        "kinds": {ids[i]: kind_names[k] for i, k in enumerate(view.kind_ids(nodes).tolist())},
        "depths": dict(zip(ids, view.depths(nodes).tolist(), strict=True)),
        "routing": {ids[i]: fields.routing_key(i) for i in range(view.n)},
        "routing_ids": {
            ids[i]: routing_keys[k] for i, k in enumerate(fields.routing_ids(nodes).tolist())
        },
        "bodies": {ids[i]: fields.body(i) for i in range(view.n)},
        "evidence": {ids[i]: fields.evidence(i) for i in range(view.n)},
        "walks": walks,
    }


def assert_view_exact(log: SubstrateLog, *, queries: int = 2, rng: random.Random) -> None:
    """The log's incremental view against a rebuild from the fold of its events."""
    captured = T0 + timedelta(hours=2)
    incremental = MemorySnapshot.from_log(log, captured)
    rebuilt = MemorySnapshot.from_state(fold(list(log)), captured)
    assert incremental.index.index is log.branch.budget.peek(DERIVED, MEMORY_INDEX)
    assert incremental.index.index is not rebuilt.index.index
    assert describe(incremental) == describe(rebuilt)
    if not incremental.nodes:
        return
    origins = rng.sample(sorted(incremental.nodes), min(queries, len(incremental.nodes)))
    for origin in origins:
        for spec in rng.sample(SPECS, 4):
            scorer = rng.choice([token_jaccard, SCORER])
            text = rng.choice(["", "n001 at 3", "at n004 9"])
            key = rng.choice([None, None, "planner", "analyst"])
            query = Query(text=text, scorer=scorer, routing_key=key)
            got = query_vectorised(incremental, origin, spec, query)
            assert rows(got) == rows(query_vectorised(rebuilt, origin, spec, query))
            assert rows(got) == rows(query_reference(rebuilt, origin, spec, query))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32))
def test_incremental_views_equal_a_rebuild_after_every_step_of_random_forked_runs(seed):
    rng = random.Random(seed)
    logs = [SubstrateLog()]
    for tick in range(60):
        base = rng.choice(logs[-5:])
        if rng.random() < 0.25 and len(base):  # an older prefix, then a fork from it
            base = base.prefix(rng.randrange(len(base) + 1))
        state, batch = base.state, []
        for step in range(rng.randint(1, 4)):
            event = next_event(state, rng, tick * 10 + step)
            state = fold([event], state)
            batch.append(event)
        log = base.appended(batch)
        assert_view_exact(log, rng=rng)
        logs.append(log)


def test_views_taken_at_many_points_of_one_long_run_stay_exact():
    rng = random.Random(17)
    events = random_run(rng, 700)
    log = SubstrateLog(events)
    assert len(log.state.nodes) >= 100  # hundreds of events, about a hundred nodes and more
    log.derived(MEMORY_INDEX, MemoryIndex)  # the index takes in the whole run first ...
    for length in sorted(rng.sample(range(len(events) + 1), 25)):  # ... then older views
        assert_view_exact(log.prefix(length), queries=3, rng=rng)
    assert log.branch.budget.peek(DERIVED, MEMORY_INDEX).length == len(events)


def assert_views_equal(live: SubstrateLog, restarted: SubstrateLog, rng: random.Random) -> None:
    """Two logs of the same events, each reading its own branch's index: same answers, bit for bit."""
    captured = T0 + timedelta(hours=2)
    ours = MemorySnapshot.from_log(live, captured)
    theirs = MemorySnapshot.from_log(restarted, captured)
    assert ours.index.index is not theirs.index.index
    assert ours.index.length == theirs.index.length == len(live)
    assert describe(ours) == describe(theirs)
    for origin in rng.sample(sorted(ours.nodes), min(3, len(ours.nodes))):
        for spec in rng.sample(SPECS, 4):
            text = rng.choice(["", "n001 at 3", "at n004 9"])
            query = Query(text=text, scorer=rng.choice([token_jaccard, SCORER]))
            assert rows(query_vectorised(ours, origin, spec, query)) == rows(
                query_vectorised(theirs, origin, spec, query)
            )


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32))
def test_an_index_rebuilt_after_a_restart_equals_the_incremental_one_at_many_points(seed):
    # the run as it happened: one index per branch, extended by each step's few events; a
    # restart at a random point reads the events back from storage into a new branch, whose
    # index is built from all of them in one batch, then the resumed run goes on from it
    from cortex_agents.persistence._store import decode_event, encode_event
    from cortex_agents.substrate._log import LogBuffer

    rng = random.Random(seed)
    events = random_run(rng, 260)
    live = SubstrateLog()

    def grow(upto: int) -> SubstrateLog:  # bound after every step, as stages do
        nonlocal live
        while len(live) < upto:
            live = live.appended(events[len(live) : min(upto, len(live) + rng.randint(1, 5))])
            fields_of(MemorySnapshot.from_log(live, T0).index, default_extractor)
        return live.prefix(upto)

    for point in sorted(rng.sample(range(1, len(events) - 10), 6)):
        stored = [decode_event(encode_event(event)) for event in events[:point]]
        restarted = LogBuffer(stored).view(point)
        assert_views_equal(grow(point), restarted, rng)
        for older in rng.sample(range(point), min(2, point)):  # the rebuilt index, older views
            assert_views_equal(grow(older), restarted.prefix(older), rng)
        resumed = restarted.appended(events[point : point + rng.randint(1, 10)])
        assert resumed.branch is not restarted.branch  # storage's branch is never extended
        assert_views_equal(grow(len(resumed)), resumed, rng)
        assert_view_exact(resumed, rng=rng)  # and both equal an index of the fold


def chain(n: int, *, settle: bool = True) -> list:
    """``n`` nodes in a chain with a side branch every third node, each settled in turn."""
    events: list = []
    for i in range(n):
        at = T0 + timedelta(seconds=i)
        events.append(NodeScheduled(node_id=f"n{i:04d}", kind="work", at=at))
        if i:
            events.append(EdgeAdded(source=f"n{i - 1:04d}", target=f"n{i:04d}", at=at))
        if i > 2 and i % 3 == 0:
            events.append(EdgeAdded(source=f"n{i - 3:04d}", target=f"n{i:04d}", at=at))
        if settle:
            events.append(StageStarted(node_id=f"n{i:04d}", at=at))
            events.append(
                StageCompleted(node_id=f"n{i:04d}", at=at, output={"finding": f"step {i}"})
            )
    return events


def test_ancestor_influence_keeps_its_bits_as_the_run_grows():
    events = chain(400)
    log = SubstrateLog(events)
    origin = "n0200"
    spec = WalkSpec(
        direction="ancestors", prior="influence", weights=Weights(graph=1, temporal=0, semantic=0)
    )
    prefix = log.prefix(
        events.index(next(e for e in events if getattr(e, "node_id", "") == "n0201"))
    )
    early = {
        m.node_id: m.graph
        for m in query_vectorised(MemorySnapshot.from_log(prefix, T0), origin, spec)
    }
    late = {
        m.node_id: m.graph for m in query_vectorised(MemorySnapshot.from_log(log, T0), origin, spec)
    }
    assert len(early) == 200 and early == late  # same floats, to the last bit
    assert len(set(early.values())) > 100  # sums of many terms, not a few exact values


def test_binding_a_snapshot_costs_the_new_events_only():
    events = chain(300)
    log = SubstrateLog()
    index = None
    for start in range(0, len(events), 40):
        log = log.appended(events[start : start + 40])
        view = MemorySnapshot.from_log(log, T0).index
        index = index or view.index
        assert view.index is index and index.length == len(log)  # one index, extended
        assert view.n == len(log.state.nodes)
    assert index is not None and index.length == len(events)


def test_an_index_meeting_an_event_it_cannot_apply_fails_loudly_and_stays_failed():
    events = chain(5)
    index = MemoryIndex()
    index.extend(events[:3], fold(events[:3]))  # n0000 scheduled, started, completed
    skipped = events[3:5]  # n0001 scheduled, then its edge
    with pytest.raises(InvalidEvent, match="holds no node 'n0001'"):
        index.extend(skipped[1:], fold(events[:5]))  # the edge without the scheduling
    with pytest.raises(InvalidEvent, match="unusable"):
        index.at(3)
    with pytest.raises(InvalidEvent, match="unusable"):
        index.extend(skipped, fold(events[:5]))


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (StageCompleted(node_id="n0000", at=T0, output=None), "already settled"),
        (NodeScheduled(node_id="n0000", kind="work", at=T0), "already holds"),
        ("not an event", "cannot apply str"),
    ],
)
def test_events_out_of_step_with_the_index_are_refused(event, message):
    events = chain(1)
    index = MemoryIndex()
    index.extend(events, fold(events))
    with pytest.raises(InvalidEvent, match=message):
        index.extend([event], fold(events))


def test_an_index_whose_state_disagrees_with_it_fails_loudly():
    events = chain(3)
    index = MemoryIndex()
    with pytest.raises(InvalidEvent, match="the state 3 and 2"):
        index.extend(events[:4], fold(events))  # the state after more events than given


def test_a_hand_built_snapshot_with_a_cycle_is_refused_for_every_query():
    from cortex_agents.errors import CycleError
    from tests.support.helpers import node

    snap = MemorySnapshot.of([node("a"), node("b"), node("c")], [("a", "b"), ("b", "a")], T0)
    with pytest.raises(CycleError):
        query_vectorised(snap, "c")


@pytest.mark.parametrize("where", ["anywhere", "near the end"])
def test_a_fork_carries_the_index_as_of_its_fork_point_and_stays_exact(where):
    # near the end: a retried step or parallel tool calls on one state (the fork copies
    # and trims the few later entries); anywhere: an older fork (it keeps what it needs)
    rng = random.Random(23)
    events = random_run(rng, 400)
    log = SubstrateLog(events)
    assert_view_exact(log, queries=4, rng=rng)  # the index, its fields and vectors, all built
    parent = log.branch.budget.peek(DERIVED, MEMORY_INDEX)
    n = len(events)
    cuts = rng.sample(range(1, n), 12) if where == "anywhere" else range(n - 12, n)
    for cut in sorted(cuts):
        state, batch = log.prefix(cut).state, []
        for step in range(rng.randint(1, 6)):  # the fork goes on differently
            event = next_event(state, rng, 10_000 + cut * 10 + step)
            state = fold([event], state)
            batch.append(event)
        fork = log.prefix(cut).appended(batch)
        assert fork.branch is not log.branch
        carried = fork.branch.budget.peek(DERIVED, MEMORY_INDEX)
        assert carried is not parent and carried.length == cut  # copied, not re-read
        assert_view_exact(fork, queries=3, rng=rng)
        assert_view_exact(fork.prefix(cut), queries=2, rng=rng)
    assert parent.length == len(events)
    assert_view_exact(log, queries=2, rng=rng)  # forks never touched the parent


def test_the_compiled_walk_equals_the_python_walk_on_every_view():
    from scipy.sparse.csgraph import breadth_first_order

    from cortex_agents.memory._view import _jumped_walk

    rng = random.Random(29)
    events = random_run(rng, 500)
    log = SubstrateLog(events)
    log.derived(MEMORY_INDEX, MemoryIndex)
    compiled_walks = 0
    for length in sorted(rng.sample(range(1, len(events) + 1), 15)):
        view = MemorySnapshot.from_log(log.prefix(length), T0).index
        index = view.index
        for relation in ("ancestors", "descendants"):
            matrix = None
            while matrix is None:  # asked twice for one edge set: built
                matrix = index.adjacency(relation, view.edges, view.removals)
            for origin in range(view.n):
                fast = dict(zip(*(a.tolist() for a in view.walk(relation, origin)), strict=True))
                compiled_walks += 1
                index.budget.evict(INDEX_ADJACENCY)  # the Python BFS, on the same view
                index.budget.evict(INDEX_ASKED)
                nodes, hops = view.walk(relation, origin)
                slow = dict(zip(nodes.tolist(), hops.tolist(), strict=True))
                assert fast == slow, (length, relation, origin)
                key = (index._token, relation, view.edges, view.removals)
                index.budget.put(INDEX_ADJACENCY, key, matrix)
                if origin < matrix.shape[0]:  # hops by levels and by pointer jumping agree
                    order, parents = breadth_first_order(
                        matrix, origin, directed=True, return_predecessors=True
                    )
                    local = np.empty(matrix.shape[0], dtype=np.int64)
                    local[order] = np.arange(len(order))
                    jumped = _jumped_walk(order, local[parents[order[1:]]])
                    assert dict(zip(*(a.tolist() for a in jumped), strict=True)) == slow
    assert compiled_walks > 500
    assert any(isinstance(e, EdgeRemoved) for e in events)  # views with edges taken out


def test_influence_read_from_the_compiled_matrix_equals_the_reference_bit_for_bit():
    # once a view's edge set has a compiled matrix, the triangular system takes each cone
    # node's successors from it (no sort): the same floats as the reference's ordered sums
    rng = random.Random(37)
    events = random_run(rng, 500)
    log = SubstrateLog(events)
    compiled = 0
    for length in sorted(rng.sample(range(50, len(events) + 1), 8)):
        snapshot = MemorySnapshot.from_log(log.prefix(length), T0 + timedelta(hours=2))
        rebuilt = MemorySnapshot.from_state(fold(events[:length]), snapshot.captured_at)
        view = snapshot.index
        for origin in rng.sample(sorted(snapshot.nodes), min(6, len(snapshot.nodes))):
            for spec in SPECS:
                if spec.prior != "influence":
                    continue
                for relation in ("ancestors", "descendants"):
                    while view.index.adjacency(relation, view.edges, view.removals) is None:
                        pass  # asked twice for one edge set: built
                got = query_vectorised(snapshot, origin, spec)
                assert rows(got) == rows(query_reference(rebuilt, origin, spec))
                compiled += 1
    assert compiled > 100


def test_embedding_axis_of_a_cone_larger_than_a_chunk_equals_the_reference():
    events = chain(2600)
    snapshot = MemorySnapshot.from_log(SubstrateLog(events), T0 + timedelta(hours=1))
    spec = WalkSpec(weights=Weights(graph=0, temporal=0, semantic=1))
    query = Query(text="step 17 of many", scorer=SCORER)
    got = query_vectorised(snapshot, "n2599", spec, query)
    assert len(got) == 2599 and sum(m.semantic > 0 for m in got) > 2 * 1024  # every chunk
    rebuilt = MemorySnapshot.from_state(fold(events), snapshot.captured_at)
    assert rows(got) == rows(query_reference(rebuilt, "n2599", spec, query))


def test_readers_of_older_views_stay_exact_while_the_branch_grows_in_another_thread():
    import sys
    import threading

    rng = random.Random(31)
    events = random_run(rng, 600)
    captured = T0 + timedelta(hours=2)
    lengths = list(range(20, 300, 20))
    spec = WalkSpec(direction="bidirectional", prior="influence")
    query = Query(text="n003 at 9", scorer=SCORER)
    expected = {}
    for n in lengths:
        rebuilt = MemorySnapshot.from_state(fold(events[:n]), captured)
        origin = sorted(rebuilt.nodes)[0]
        expected[n] = (origin, rows(query_vectorised(rebuilt, origin, spec, query)))
    log = SubstrateLog(events[:300])
    errors: list[BaseException] = []

    def reader(seed: int) -> None:
        pick = random.Random(seed)
        try:
            for _ in range(40):
                n = pick.choice(lengths)
                origin, want = expected[n]
                snapshot = MemorySnapshot.from_log(log.prefix(n), captured)
                assert rows(query_vectorised(snapshot, origin, spec, query)) == want
        except BaseException as exc:  # reported below
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        grown = log
        for start in range(300, len(events), 10):  # the branch and its index grow meanwhile
            grown = grown.appended(events[start : start + 10])
            fields_of(MemorySnapshot.from_log(grown, captured).index, default_extractor)
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert grown.branch is log.branch and log.branch.budget.peek(
        DERIVED, MEMORY_INDEX
    ).length == len(events)


def test_the_default_in_memory_embedding_cache_is_bounded_now_that_the_index_keeps_vectors():
    from cortex_agents.memory import InMemoryEmbeddingCache
    from cortex_agents.memory._embedding import DEFAULT_CACHE_ENTRIES

    cache = InMemoryEmbeddingCache()
    vector = np.zeros(4, dtype=np.float32)
    cache.put_many("s", {f"k{i}": vector for i in range(DEFAULT_CACHE_ENTRIES + 5)})
    assert len(cache) == DEFAULT_CACHE_ENTRIES <= 16_384  # about 17 MB at 256 dimensions
    assert cache.get_many("s", ["k0", "k4", "k5"]).keys() == {"k5"}  # oldest out first


def test_nodes_with_the_same_body_share_one_vector_row_and_rank_as_the_reference():
    events = []
    for i in range(60):
        at = T0 + timedelta(seconds=i)
        events.append(NodeScheduled(node_id=f"n{i:02d}", kind="work", at=at))
        if i:
            events.append(EdgeAdded(source=f"n{i - 1:02d}", target=f"n{i:02d}", at=at))
        events.append(StageStarted(node_id=f"n{i:02d}", at=at))
        finding = ["dose effect", "placebo risk", "", "dose effect cohort"][i % 4]
        events.append(StageCompleted(node_id=f"n{i:02d}", at=at, output={"finding": finding}))
    embedder = HashEmbedder()
    scorer = EmbeddingScorer(embedder)
    log = SubstrateLog(events)
    snapshot = MemorySnapshot.from_log(log, T0 + timedelta(hours=1))
    spec = WalkSpec(weights=Weights(graph=0.5, temporal=0, semantic=1))
    query = Query(text="dose risk", scorer=scorer)
    got = query_vectorised(snapshot, "n59", spec, query)
    fields = fields_index(log.branch.budget.peek(DERIVED, MEMORY_INDEX), default_extractor)
    held = fields._vectors[scorer.scorer_id]
    assert held.done == 3  # three distinct non-empty bodies: a row each, not one per node
    assert len(held.rows.data) < 60
    assert sorted(embedder.calls) == sorted(
        ["dose effect", "placebo risk", "dose effect cohort", "dose risk"]
    )
    rebuilt = MemorySnapshot.from_state(fold(events), snapshot.captured_at)
    assert rows(got) == rows(query_reference(rebuilt, "n59", spec, query))
    assert {m.semantic for m in got if m.body_text == ""} == {0.0}


def test_a_handles_memo_keeps_its_most_recent_origins_and_computes_an_evicted_one_again():
    from cortex_agents.memory import MemoryHandle
    from cortex_agents.memory._engine import MEMO_ENTRIES

    events = chain(MEMO_ENTRIES + 10)
    snapshot = MemorySnapshot.from_log(SubstrateLog(events), T0 + timedelta(hours=1))
    handle = MemoryHandle(snapshot, "n0005")
    spec = WalkSpec(prior="influence")
    first = rows(handle.query(spec))
    assert handle.influence_computations == 1
    handle.query(spec)
    assert handle.influence_computations == 1  # served from the memo
    for i in range(6, 6 + MEMO_ENTRIES):
        handle.query(spec, origin=f"n{i:04d}")
    assert handle.influence_computations == 1 + MEMO_ENTRIES
    memo = handle._memo
    assert max(len(memo.walks), len(memo.influence), len(memo.merged), len(memo.columns)) <= (
        MEMO_ENTRIES
    )
    handle.query(spec, origin=f"n{5 + MEMO_ENTRIES:04d}")  # the most recent: still memoised
    assert handle.influence_computations == 1 + MEMO_ENTRIES
    assert rows(handle.query(spec)) == first  # evicted: computed again, the same floats
    assert handle.influence_computations == 2 + MEMO_ENTRIES
