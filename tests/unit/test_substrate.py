"""The pure substrate: the fold, its integrity rules, the event JSON form."""

from itertools import pairwise

import pytest

from cortex_agents.errors import InvalidArgument, InvalidEvent, UnknownNode
from cortex_agents.memory import MemorySnapshot
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.substrate import (
    EMPTY_STATE,
    EdgeAdded,
    EdgeRemoved,
    NodeRetired,
    NodeScheduled,
    RewriteAdmitted,
    RewriteApplied,
    RewriteBudgetSet,
    RewriteFact,
    RewriteRejected,
    StageCompleted,
    StageFailed,
    StageStarted,
    ToolCallMade,
    event_from_dict,
    event_to_dict,
    fold,
)
from tests.support.helpers import at


def run_of(*stages: str) -> list:
    """Schedule a chain of stages, then start and complete each."""
    events: list = [NodeScheduled(node_id=s, kind=s.split("-")[0], at=at(0)) for s in stages]
    events += [EdgeAdded(source=a, target=b, at=at(0)) for a, b in pairwise(stages)]
    for i, stage in enumerate(stages, 1):
        events += [
            StageStarted(node_id=stage, at=at(i)),
            StageCompleted(node_id=stage, at=at(i + 0.5), output={"text": stage}),
        ]
    return events


def test_fold_materializes_nodes_edges_and_settled_observations():
    state = fold(run_of("planner", "analyst-a", "reviewer"))
    assert list(state.nodes) == ["planner", "analyst-a", "reviewer"]
    assert [(e.source, e.target) for e in state.edges] == [
        ("planner", "analyst-a"),
        ("analyst-a", "reviewer"),
    ]
    assert all(
        n.status == "completed" and n.settled and n.attempts == 1 for n in state.nodes.values()
    )
    assert state.nodes["analyst-a"].completed_at == at(2.5)
    assert [o.node_id for o in state.observations()] == ["planner", "analyst-a", "reviewer"]
    assert state.seq == 3 + 2 + 6
    assert state.predecessors("reviewer") == ("analyst-a",)
    assert state.successors("planner") == ("analyst-a",)


def test_fold_is_incremental_and_leaves_the_input_state_alone():
    events = run_of("planner", "analyst-a")
    whole = fold(events)
    part = fold(events[:4])
    rest = fold(events[4:], part)
    assert rest == whole
    assert part.nodes["analyst-a"].status == "pending"
    assert EMPTY_STATE.seq == 0 and not EMPTY_STATE.nodes


def test_only_completed_is_settled():
    events = [
        NodeScheduled(node_id="a", kind="analyst", at=at(0)),
        NodeScheduled(node_id="b", kind="analyst", at=at(0)),
        StageStarted(node_id="a", at=at(1)),
        StageStarted(node_id="b", at=at(1)),
        StageFailed(node_id="b", at=at(2), error="boom"),
    ]
    state = fold(events)
    assert state.nodes["a"].status == "running" and not state.nodes["a"].settled
    assert state.nodes["b"].status == "failed" and state.nodes["b"].error == "boom"
    assert state.observations() == ()
    # a failed stage may be retried
    retried = fold(
        [StageStarted(node_id="b", at=at(3)), StageCompleted(node_id="b", at=at(4))], state
    )
    assert (
        retried.nodes["b"].attempts == 2
        and retried.nodes["b"].settled
        and retried.nodes["b"].error is None
    )


@pytest.mark.parametrize(
    ("tail", "reason"),
    [
        ([NodeScheduled(node_id="a", kind="x", at=at(0))], "already scheduled"),
        ([EdgeAdded(source="a", target="ghost", at=at(0))], "unknown node 'ghost'"),
        ([EdgeAdded(source="a", target="a", at=at(0))], "cycle"),
        ([EdgeAdded(source="b", target="a", at=at(0))], "cycle"),
        ([EdgeAdded(source="a", target="b", at=at(0))], "already exists"),
        ([StageCompleted(node_id="a", at=at(0))], "completed; it cannot start again"),
        (
            [StageStarted(node_id="b", at=at(0)), StageStarted(node_id="b", at=at(0))],
            "already running",
        ),
        ([StageCompleted(node_id="b", at=at(0))], "only a running node completes"),
        ([StageFailed(node_id="b", at=at(0), error="x")], "only a running node fails"),
        ([StageStarted(node_id="ghost", at=at(0))], "unknown node"),
        (
            [ToolCallMade(node_id="ghost", tool="t", call_id="1", arguments={}, at=at(0))],
            "unknown node",
        ),
    ],
)
def test_fold_rejects_events_that_cannot_follow(tail, reason):
    base = fold(
        [
            NodeScheduled(node_id="a", kind="x", at=at(0)),
            NodeScheduled(node_id="b", kind="x", at=at(0)),
            EdgeAdded(source="a", target="b", at=at(0)),
            StageStarted(node_id="a", at=at(0)),
            StageCompleted(node_id="a", at=at(0)),
        ]
    )
    if "completed; it cannot" in reason:
        tail = [StageStarted(node_id="a", at=at(0))]
    with pytest.raises(InvalidEvent, match=reason) as caught:
        fold(tail, base)
    assert caught.value.index >= base.seq


def test_rewrite_decisions_are_recorded_in_order():
    admitted = RewriteFact(
        rewrite_id=1, proposer="a", proposal={"op": "append_after"}, decision="admitted"
    )
    rejected = RewriteFact(
        rewrite_id=None,
        proposer="a",
        proposal={},
        decision="rejected",
        code="policy_rejected",
        reason="no",
    )
    state = fold(
        [
            NodeScheduled(node_id="a", kind="x", at=at(0)),
            RewriteAdmitted(fact=admitted, at=at(1)),
            RewriteRejected(fact=rejected, at=at(2)),
        ]
    )
    assert state.rewrites == (admitted, rejected)
    assert state.admitted_rewrites == (admitted,)
    with pytest.raises(InvalidEvent, match="decision 'admitted'"):
        fold([RewriteAdmitted(fact=rejected, at=at(3))], state)


def test_every_event_round_trips_through_json():
    fact = RewriteFact(
        rewrite_id=2,
        proposer="a",
        proposal={"op": "expand_node", "nodes": [{"id": "x"}]},
        decision="admitted",
        cost={"nodes": 1},
        budget_before={"nodes": 16},
        budget_after={"nodes": 15},
        diff={"added_nodes": ["a:x"]},
    )
    events = [
        NodeScheduled(node_id="a", kind="planner", at=at(0), config={"k": [1, 2]}, tags=("t",)),
        EdgeAdded(source="a", target="b", at=at(1)),
        StageStarted(node_id="a", at=at(2)),
        StageCompleted(node_id="a", at=at(3), output={"contract": "c", "value": [1, "x"]}),
        StageFailed(node_id="a", at=at(4), error="boom"),
        RewriteAdmitted(fact=fact, at=at(5)),
        ToolCallMade(
            node_id="a", tool="cortex_memory_query", call_id="c1", arguments={"limit": 3}, at=at(6)
        ),
    ]
    for event in events:
        assert event_from_dict(event_to_dict(event)) == event


def test_snapshot_from_state_lets_memory_read_the_substrate():
    state = fold(run_of("planner", "analyst-a", "reviewer"))
    snap = MemorySnapshot.from_state(state, at(10))
    assert [m.node_id for m in query_vectorised(snap, "reviewer")] == ["analyst-a", "planner"]
    with pytest.raises(UnknownNode):
        state.node("ghost")


def rewrite_fact(rewrite_id, *, decision="admitted", key=None, nodes=(), retired=()):
    return RewriteFact(
        rewrite_id=rewrite_id,
        proposer="a",
        proposal={},
        decision=decision,
        code=None if decision == "admitted" else "policy_rejected",
        diff={"nodes": [{"id": n} for n in nodes], "retired": list(retired)},
        key=key,
    )


def chain_ab_c():
    """a (completed) -> b -> c, b and c pending."""
    return fold(
        [
            *(NodeScheduled(node_id=n, kind="x", at=at(0)) for n in "abc"),
            EdgeAdded(source="a", target="b", at=at(0)),
            EdgeAdded(source="b", target="c", at=at(0)),
            StageStarted(node_id="a", at=at(1)),
            StageCompleted(node_id="a", at=at(1)),
        ]
    )


@pytest.mark.parametrize(
    ("tail", "reason"),
    [
        ([EdgeRemoved(source="a", target="c", at=at(2))], "does not exist"),
        (
            [StageStarted(node_id="b", at=at(2)), EdgeRemoved(source="a", target="b", at=at(2))],
            "only edges into pending work",
        ),
        ([NodeRetired(node_id="b", at=at(2))], "still has edges"),
        ([NodeRetired(node_id="a", at=at(2))], "only a pending node retires"),
        ([RewriteAdmitted(fact=rewrite_fact(2), at=at(2))], "must be 1"),
        ([RewriteRejected(fact=rewrite_fact(1, decision="rejected"), at=at(2))], "no rewrite_id"),
        ([RewriteApplied(rewrite_id=1, at=at(2))], "cannot be applied"),
        (
            [
                RewriteAdmitted(fact=rewrite_fact(1, nodes=["b:x"]), at=at(2)),
                RewriteApplied(rewrite_id=1, at=at(2)),
            ],
            "before its node 'b:x' was scheduled",
        ),
        (
            [
                RewriteAdmitted(fact=rewrite_fact(1, key="k"), at=at(2)),
                RewriteRejected(fact=rewrite_fact(None, decision="rejected", key="k"), at=at(2)),
            ],
            "already decided",
        ),
        (
            [
                RewriteBudgetSet(budget={"nodes": 1}, at=at(2)),
                RewriteBudgetSet(budget={"nodes": 2}, at=at(2)),
            ],
            "already set",
        ),
        ([RewriteBudgetSet(budget={"nodes": -1}, at=at(2))], "integers >= 0"),
    ],
)
def test_fold_guards_rewrite_materialization(tail, reason):
    with pytest.raises(InvalidEvent, match=reason):
        fold(tail, chain_ab_c())


def test_removing_and_retiring_updates_the_live_edges_and_the_watermark():
    state = fold(
        [
            RewriteBudgetSet(budget={"nodes": 4}, at=at(2)),
            RewriteAdmitted(fact=rewrite_fact(1, nodes=["b:x"], retired=["b"]), at=at(2)),
            EdgeRemoved(source="a", target="b", at=at(2)),
            EdgeRemoved(source="b", target="c", at=at(2)),
            NodeScheduled(node_id="b:x", kind="x", at=at(2)),
            EdgeAdded(source="a", target="b:x", at=at(2)),
            EdgeAdded(source="b:x", target="c", at=at(2)),
            NodeRetired(node_id="b", at=at(2)),
            RewriteApplied(rewrite_id=1, at=at(2)),
        ],
        chain_ab_c(),
    )
    assert [(e.source, e.target) for e in state.edges] == [("a", "b:x"), ("b:x", "c")]
    assert state.nodes["b"].status == "retired"
    assert state.predecessors("c") == ("b:x",)
    assert (state.watermark, state.budget, state.unapplied_rewrites) == (1, {"nodes": 4}, ())
    before = chain_ab_c()
    assert [(e.source, e.target) for e in before.edges] == [("a", "b"), ("b", "c")]  # untouched


def test_rewrite_events_round_trip_through_json():
    fact = rewrite_fact(1, key="a#1:call-1", nodes=["a:x"])
    events = [
        EdgeRemoved(source="a", target="b", at=at(1)),
        NodeRetired(node_id="b", at=at(2)),
        RewriteApplied(rewrite_id=3, at=at(3)),
        RewriteBudgetSet(budget={"nodes": 16, "edges": 32}, at=at(4)),
        RewriteAdmitted(fact=fact, at=at(5)),
    ]
    for event in events:
        assert event_from_dict(event_to_dict(event)) == event
    with pytest.raises(InvalidArgument, match="fact"):
        event_from_dict({**event_to_dict(events[-1]), "fact": {"rewrite_id": 1, "surprise": 1}})
