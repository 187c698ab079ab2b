"""The memory index keeps its caches in its branch's budget (issue 25 item 3, step 2).

The fields per extractor, the compiled adjacency and the asked counts are
three kinds of the branch's :class:`~cortex_agents.substrate._budget.DerivedBudget`,
each within the limit its constant used to be. Evicted, they are derived
again and the rankings do not change by a bit.
"""

from __future__ import annotations

import gc
import random
import weakref
from datetime import timedelta

from cortex_agents.memory import (
    EmbeddingScorer,
    MemorySnapshot,
    Query,
    WalkSpec,
    Weights,
    default_extractor,
)
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.memory._fields import fields_of
from cortex_agents.memory._index import MEMORY_INDEX, MemoryIndex
from cortex_agents.reference import query_reference
from cortex_agents.substrate import SubstrateLog, fold
from cortex_agents.substrate._branch import (
    DERIVED,
    INDEX_ADJACENCY,
    INDEX_ASKED,
    INDEX_FIELDS,
    INDEX_LIMITS,
)
from tests.support.embedding import HashEmbedder
from tests.support.helpers import T0
from tests.support.substrate import next_event, random_run

CAPTURED = T0 + timedelta(hours=2)
SPECS = [
    WalkSpec(direction=direction, weights=Weights(graph=1.0, temporal=0.5, semantic=1.0))
    for direction in ("ancestors", "descendants", "bidirectional")
]


def rankings(log: SubstrateLog, scorer: EmbeddingScorer) -> list[list[tuple]]:
    """Every spec's ranking from a few origins, as exact rows (floats compared bit for bit)."""
    snapshot = MemorySnapshot.from_log(log, CAPTURED)
    query = Query(text="finding result", scorer=scorer)
    origins = sorted(snapshot.nodes)[:: max(1, len(snapshot.nodes) // 4)]
    return [
        [(m.node_id, m.hops, m.score, m.graph, m.temporal, m.semantic) for m in got]
        for spec in SPECS
        for origin in origins
        for got in [query_vectorised(snapshot, origin, spec, query)]
    ]


def test_the_index_caches_are_kinds_of_the_branch_budget_and_evicting_them_changes_no_ranking():
    rng = random.Random(31)
    events = random_run(rng, 300)
    log = SubstrateLog(events)
    scorer = EmbeddingScorer(HashEmbedder())
    before = rankings(log, scorer)
    before_again = rankings(log, scorer)  # asked twice: the edge sets' matrices are built
    assert before_again == before
    index = log.branch.budget.peek(DERIVED, MEMORY_INDEX)
    assert isinstance(index, MemoryIndex) and index.budget is log.branch.budget
    sizes = log.branch.sizes()
    assert set(INDEX_LIMITS) <= sizes.keys()  # the index's kinds, reported with the branch's
    assert sizes[INDEX_FIELDS] >= 1 and sizes[INDEX_ASKED] >= 1 and sizes[INDEX_ADJACENCY] >= 1

    for kind in INDEX_LIMITS:  # every cache of the index gone: derived again when asked
        assert log.branch.budget.evict(kind) >= 1
    assert all(log.branch.sizes()[kind] == 0 for kind in INDEX_LIMITS)
    assert rankings(log, scorer) == before
    assert log.branch.budget.peek(DERIVED, MEMORY_INDEX) is index  # the columns were kept
    assert log.branch.sizes()[INDEX_FIELDS] >= 1

    rebuilt = MemorySnapshot.from_state(fold(events), CAPTURED)
    origin = sorted(rebuilt.nodes)[0]
    query = Query(text="finding result", scorer=scorer)
    assert [m.score for m in query_reference(rebuilt, origin, SPECS[0], query)] == [
        m.score
        for m in query_vectorised(MemorySnapshot.from_log(log, CAPTURED), origin, SPECS[0], query)
    ]


def test_the_index_kinds_evict_least_recently_used_within_their_old_bounds():
    log = SubstrateLog(random_run(random.Random(37), 300))
    view = MemorySnapshot.from_log(log, CAPTURED).index
    index = view.index
    extractors = [lambda output, i=i: default_extractor(output) for i in range(12)]

    def bodies(extractor):
        fields = fields_of(view, extractor)
        return tuple(fields.body(i) for i in range(view.n))

    read = [bodies(extractor) for extractor in extractors]
    assert len(set(read)) == 1 and any(read[0])  # the same function of the outputs, twelve keys
    kept = index.kept_per_extractor()
    assert len(kept) == INDEX_LIMITS[INDEX_FIELDS] == 8  # the old `_FIELDS_KEPT`
    assert [extractor for extractor, _, _ in kept] == extractors[-8:]  # the oldest went first
    assert bodies(extractors[0]) == read[0]  # evicted: read again, the same

    assert (INDEX_LIMITS[INDEX_ASKED], INDEX_LIMITS[INDEX_ADJACENCY]) == (64, 4)  # as before
    edge_sets = [(edges, 0) for edges in range(70)]  # the first `edges` edges, none removed
    assert index.src_col.data.shape[0] >= 70
    for edges, removals in edge_sets:  # asked once: counted, not built
        assert index.adjacency("descendants", edges, removals) is None
    assert log.branch.sizes()[INDEX_ASKED] == 64 and log.branch.sizes()[INDEX_ADJACENCY] == 0
    assert index.adjacency("descendants", *edge_sets[0]) is None  # its count was evicted
    for edges, removals in edge_sets[-6:]:  # asked again: built, the four latest kept
        assert index.adjacency("descendants", edges, removals) is not None
    assert log.branch.sizes()[INDEX_ADJACENCY] == 4
    assert index.compiled("descendants", *edge_sets[-7]) is None
    assert index.compiled("descendants", *edge_sets[-1]) is not None


def test_an_index_outside_a_branch_keeps_a_small_budget_of_its_own_and_a_fork_takes_the_forks():
    log = SubstrateLog(random_run(random.Random(41), 200))
    view = MemorySnapshot.from_state(log.state, CAPTURED).index  # built from records
    alone = view.index
    assert alone.budget is not log.branch.budget
    assert alone.budget.capacity == sum(INDEX_LIMITS.values())
    fields_of(view, default_extractor)
    assert alone.budget.sizes() == {INDEX_FIELDS: 1, INDEX_ADJACENCY: 0, INDEX_ASKED: 0}
    assert log.branch.sizes()[INDEX_FIELDS] == 0  # nothing of it in the branch's

    fields_of(MemorySnapshot.from_log(log, CAPTURED).index, default_extractor)
    rng = random.Random(43)
    other = next_event(log.prefix(150).state, rng, 10_000)  # the fork goes on differently
    fork = log.prefix(150).appended([other])
    parent = log.branch.budget.peek(DERIVED, MEMORY_INDEX)
    carried = fork.branch.budget.peek(DERIVED, MEMORY_INDEX)
    assert fork.branch is not log.branch and carried is not parent
    assert carried.budget is fork.branch.budget  # its caches live in the fork's budget
    assert fork.branch.sizes()[INDEX_FIELDS] == 1  # the parent's fields, carried as of 150
    assert [e for e, _, _ in carried.kept_per_extractor()] == [default_extractor]


def test_a_dropped_branch_frees_its_memory_index_without_the_cyclic_collector():
    # the branch's budget holds the index: were the index to hold the budget back, the two
    # would be a cycle, and a dropped branch's index (the largest thing it derives) would
    # live on until a full collection instead of going with the branch
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        log = SubstrateLog(random_run(random.Random(47), 120))
        view = MemorySnapshot.from_log(log, CAPTURED).index
        before = [fields_of(view, default_extractor).body(i) for i in range(view.n)]
        held = MemorySnapshot.from_log(log, CAPTURED).index  # a view that outlives its branch
        index, branch = weakref.ref(view.index), weakref.ref(log.branch)
        del view, log
        assert branch() is None
        assert index() is not None  # a live view holds it
        # the branch's budget is gone with it: the index's caches go on in one of its own
        assert [fields_of(held, default_extractor).body(i) for i in range(held.n)] == before
        assert held.index.budget.sizes()[INDEX_FIELDS] == 1
        del held
        assert index() is None  # freed by reference counting: no cycle kept it
    finally:
        if enabled:
            gc.enable()
