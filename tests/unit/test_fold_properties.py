"""The fold as a table of handlers: each handler alone, and properties over random runs.

Properties (hypothesis, over runs that exercise every event type):

* the edge list, as a multiset, always equals the successor map and the
  predecessor map (no edge held twice, none lost);
* folding a run in one batch, event by event, or in any split of batches,
  gives equal states.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_agents.errors import InvalidEvent
from cortex_agents.substrate import (
    EMPTY_STATE,
    EdgeAdded,
    EdgeRemoved,
    GraphState,
    NodeRetired,
    NodeScheduled,
    RewriteAdmitted,
    RewriteApplied,
    RewriteFact,
    StageCompleted,
    StageFailed,
    StageStarted,
    ToolCallMade,
    fold,
)
from cortex_agents.substrate._events import EVENT_TYPES
from cortex_agents.substrate._fold import (
    HANDLERS,
    Draft,
    edge_added,
    edge_removed,
    node_retired,
    node_scheduled,
    rewrite_applied,
    rewrite_decided,
    stage_completed,
    stage_failed,
    stage_started,
    tool_call_made,
)
from tests.support.helpers import at
from tests.support.substrate import random_run

RUNS = settings(max_examples=60, deadline=None)


def graph(*edges: tuple[str, str], nodes: tuple[str, ...] = ("a", "b", "c")) -> GraphState:
    events = [NodeScheduled(node_id=n, kind="k", at=at(0)) for n in nodes]
    events += [EdgeAdded(source=s, target=t, at=at(0)) for s, t in edges]
    return fold(events)


def apply(handler, state: GraphState, event) -> GraphState:
    """One handler alone: a draft over ``state``, the event, the frozen result."""
    draft = Draft.of(state)
    handler(draft, event, draft.seq)
    draft.seq += 1
    return draft.finish()


def edge_counts(state: GraphState) -> tuple[Counter, Counter, Counter]:
    edges = Counter((e.source, e.target) for e in state.edges)
    succs = Counter((u, v) for u in state.nodes for v in state.successors(u))
    preds = Counter((u, v) for v in state.nodes for u in state.predecessors(v))
    return edges, succs, preds


# -- the table -------------------------------------------------------------------------------
def test_every_event_type_has_exactly_one_handler():
    assert set(HANDLERS) == set(EVENT_TYPES.values())


def test_an_object_that_is_not_an_event_is_rejected_with_its_position():
    with pytest.raises(InvalidEvent) as caught:
        fold([NodeScheduled(node_id="a", kind="k", at=at(0)), "not an event"])
    assert caught.value.index == 1


# -- each handler alone ------------------------------------------------------------------------
def test_node_scheduled_adds_a_pending_node_in_order_and_refuses_a_second():
    state = apply(node_scheduled, graph(), NodeScheduled(node_id="d", kind="x", at=at(1)))
    assert list(state.nodes) == ["a", "b", "c", "d"]
    assert state.node("d").status == "pending" and state.node("d").kind == "x"
    with pytest.raises(InvalidEvent, match="already scheduled"):
        apply(node_scheduled, state, NodeScheduled(node_id="d", kind="x", at=at(1)))


def test_edge_added_links_both_maps_and_refuses_duplicates_and_cycles():
    state = apply(edge_added, graph(), EdgeAdded(source="a", target="b", at=at(1)))
    assert state.successors("a") == ("b",) and state.predecessors("b") == ("a",)
    assert [(e.source, e.target) for e in state.edges] == [("a", "b")]
    with pytest.raises(InvalidEvent, match="already exists"):
        apply(edge_added, state, EdgeAdded(source="a", target="b", at=at(1)))
    with pytest.raises(InvalidEvent, match="cycle"):
        apply(edge_added, state, EdgeAdded(source="b", target="a", at=at(1)))


def test_edge_removed_unlinks_pending_targets_only():
    base = graph(("a", "b"), ("b", "c"))
    state = apply(edge_removed, base, EdgeRemoved(source="a", target="b", at=at(1)))
    assert state.successors("a") == () and [(e.source, e.target) for e in state.edges] == [
        ("b", "c")
    ]
    running = fold([StageStarted(node_id="c", at=at(1))], base)
    with pytest.raises(InvalidEvent, match="only edges into pending work"):
        apply(edge_removed, running, EdgeRemoved(source="b", target="c", at=at(2)))


def test_node_retired_needs_a_pending_node_without_edges():
    state = apply(node_retired, graph(("a", "b")), NodeRetired(node_id="c", at=at(1)))
    assert state.node("c").status == "retired"
    with pytest.raises(InvalidEvent, match="still has edges"):
        apply(node_retired, state, NodeRetired(node_id="b", at=at(1)))


def test_stage_lifecycle_handlers_count_attempts_and_keep_outputs():
    state = apply(stage_started, graph(), StageStarted(node_id="a", at=at(1)))
    assert (state.node("a").status, state.node("a").attempts) == ("running", 1)
    failed = apply(stage_failed, state, StageFailed(node_id="a", at=at(2), error="x"))
    assert (failed.node("a").status, failed.node("a").error) == ("failed", "x")
    again = apply(stage_started, failed, StageStarted(node_id="a", at=at(3)))
    assert (again.node("a").attempts, again.node("a").error) == (2, None)
    done = apply(stage_completed, again, StageCompleted(node_id="a", at=at(4), output={"v": 1}))
    assert done.node("a").settled and done.node("a").output == {"v": 1}
    with pytest.raises(InvalidEvent, match="cannot start again"):
        apply(stage_started, done, StageStarted(node_id="a", at=at(5)))


def test_rewrite_handlers_keep_ids_dense_keys_unique_and_move_the_watermark():
    fact = RewriteFact(rewrite_id=1, proposer="a", proposal={}, decision="admitted", key="a#1:p1")
    state = apply(rewrite_decided, graph(), RewriteAdmitted(fact=fact, at=at(1)))
    assert state.last_rewrite_id == 1 and state.decided("a#1:p1")
    assert state.unapplied_rewrites == (fact,)
    again = RewriteFact(rewrite_id=2, proposer="a", proposal={}, decision="admitted", key="a#1:p1")
    with pytest.raises(InvalidEvent, match="already decided"):
        apply(rewrite_decided, state, RewriteAdmitted(fact=again, at=at(2)))
    applied = apply(rewrite_applied, state, RewriteApplied(rewrite_id=1, at=at(2)))
    assert applied.watermark == 1 and applied.unapplied_rewrites == ()
    with pytest.raises(InvalidEvent, match="cannot be applied"):
        apply(rewrite_applied, applied, RewriteApplied(rewrite_id=2, at=at(3)))


def test_tool_call_made_needs_a_known_node_and_changes_nothing_else():
    base = graph(("a", "b"))
    state = apply(
        tool_call_made,
        base,
        ToolCallMade(node_id="a", tool="t", call_id="1", arguments={}, at=at(1)),
    )
    assert state.seq == base.seq + 1 and state.nodes == base.nodes and state.edges == base.edges
    with pytest.raises(InvalidEvent, match="unknown node"):
        apply(
            tool_call_made,
            base,
            ToolCallMade(node_id="z", tool="t", call_id="1", arguments={}, at=at(1)),
        )


def test_a_handler_leaves_the_state_it_drafts_from_untouched():
    base = graph(("a", "b"))
    before = (list(base.nodes), list(base.edges), base.successors("a"), base.seq)
    apply(edge_removed, base, EdgeRemoved(source="a", target="b", at=at(1)))
    apply(edge_added, base, EdgeAdded(source="a", target="c", at=at(1)))
    assert (list(base.nodes), list(base.edges), base.successors("a"), base.seq) == before


# -- the bug this table fixed ------------------------------------------------------------------
def test_an_edge_removed_and_added_again_in_one_batch_is_held_once():
    base = graph(("a", "b"), ("a", "c"))
    batch = [
        EdgeRemoved(source="a", target="b", at=at(1)),
        EdgeAdded(source="a", target="b", at=at(1)),
    ]
    state = fold(batch, base)
    assert [(e.source, e.target) for e in state.edges] == [("a", "c"), ("a", "b")]
    assert len(state.successors("a")) == 2  # out-degree counted once per edge
    one_by_one = fold(batch[1:], fold(batch[:1], base))
    assert state == one_by_one


# -- properties --------------------------------------------------------------------------------
@RUNS
@given(st.integers(0, 2**32), st.integers(1, 120))
def test_the_edge_multiset_always_equals_the_successor_and_predecessor_maps(seed, length):
    rng = random.Random(seed)
    events = random_run(rng, length)
    state = EMPTY_STATE
    position = 0
    while position < len(events):  # random batches, so removals and re-adds share batches
        size = rng.randint(1, 6)
        state = fold(events[position : position + size], state)
        position += size
        edges, succs, preds = edge_counts(state)
        assert edges == succs == preds
        assert max(edges.values(), default=1) == 1


@RUNS
@given(st.integers(0, 2**32), st.integers(1, 120), st.lists(st.integers(1, 8), max_size=30))
def test_folding_in_one_batch_equals_folding_event_by_event(seed, length, cuts):
    events = random_run(random.Random(seed), length)
    whole = fold(events)
    stepwise = EMPTY_STATE
    for event in events:
        stepwise = fold([event], stepwise)
    assert whole == stepwise
    batched, position = EMPTY_STATE, 0
    for size in [*cuts, len(events)]:
        batched = fold(events[position : position + size], batched)
        position += size
    assert batched == whole
    assert whole.seq == len(events)
    assert whole.last_rewrite_id == max(
        (r.rewrite_id or 0 for r in whole.rewrites if r.decision == "admitted"), default=0
    )
    assert all(whole.decided(r.key) for r in whole.rewrites)


@RUNS
@given(st.integers(0, 2**32), st.integers(2, 80))
def test_a_rejected_batch_changes_nothing(seed, length):
    rng = random.Random(seed)
    events = random_run(rng, length)
    cut = rng.randrange(1, len(events))
    base = fold(events[:cut])
    snapshot = (list(base.nodes.items()), list(base.edges), base.rewrites, base.seq)
    bad = NodeScheduled(
        node_id=events[0].node_id if hasattr(events[0], "node_id") else "n000", kind="k", at=at(0)
    )
    with pytest.raises(InvalidEvent):
        fold([*events[cut:], bad, bad], base)
    assert (list(base.nodes.items()), list(base.edges), base.rewrites, base.seq) == snapshot
