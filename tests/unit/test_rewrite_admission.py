"""Admission, pure: the algebra's diffs, one test per rejection code, each budget dimension alone,
policy, all-or-nothing, monotone ids and idempotent keys."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cortex_agents.errors import InvalidEvent
from cortex_agents.rewrite import (
    DIMENSIONS,
    RewriteDiff,
    RewritePolicy,
    admit,
    materialize,
    parse_proposal,
    static_cost,
)
from cortex_agents.snapshotfile import SnapshotDocument, dump_snapshot
from cortex_agents.substrate import RewriteAdmitted, StageStarted, fold
from tests.support.helpers import at
from tests.support.rewrite import VOCABULARY, graph, proposal, session


def decide(state, raw, proposer="rewriter", **kwargs):
    kwargs.setdefault("policy", RewritePolicy())
    kwargs.setdefault("granted", dict.fromkeys(DIMENSIONS, 100))
    return admit(state, raw, proposer=proposer, vocabulary=VOCABULARY, **kwargs)


def applied(state, fact):
    return fold([RewriteAdmitted(fact=fact, at=at(50)), *materialize(fact, at(50))], state)


def edges_of(state):
    return sorted((e.source, e.target) for e in state.edges)


# --- the algebra ---------------------------------------------------------------------------


def test_append_after_hangs_the_entry_behind_the_anchor_and_the_exit_before_its_successors():
    state = graph()
    fact = decide(state, proposal("rewriter", ["follow", "recheck"]))
    assert fact.decision == "admitted"
    after = applied(state, fact)
    assert ("rewriter", "publish") not in edges_of(after)
    assert {("rewriter", "rewriter:follow"), ("rewriter:follow", "rewriter:recheck")} <= set(
        edges_of(after)
    )
    assert ("rewriter:recheck", "publish") in edges_of(after)
    assert fact.diff["edges_removed"] == [["rewriter", "publish"]]
    assert [n["id"] for n in fact.diff["nodes"]] == ["rewriter:follow", "rewriter:recheck"]
    assert after.nodes["rewriter:follow"].tags == ("rewrite-1",)


def test_expand_retain_keeps_the_anchor_feeding_its_successors():
    state = graph()
    fact = decide(state, proposal("rewriter", ["x"], op="expand_node", mode="retain"))
    after = applied(state, fact)
    assert {("rewriter", "rewriter:x"), ("rewriter:x", "publish"), ("rewriter", "publish")} <= set(
        edges_of(after)
    )
    assert fact.diff["edges_removed"] == []


def test_expand_replace_retires_the_anchor_and_reattaches_both_sides():
    state = graph(completed=("planner",))  # analyst-a proposes, merge below it is pending
    fact = decide(
        state,
        proposal(
            "merge",
            ["left", "right"],
            op="expand_node",
            mode="replace",
            edges=[],
            entry=["left", "right"],
            exit=["left", "right"],
        ),
        proposer="analyst-a",
    )
    assert fact.decision == "admitted", fact.reason
    after = applied(state, fact)
    assert after.nodes["merge"].status == "retired"
    assert after.predecessors("merge") == () and after.successors("merge") == ()
    expected = {
        (p, f"merge:{x}") for p in ("analyst-a", "analyst-b") for x in ("left", "right")
    } | {(f"merge:{x}", "reviewer") for x in ("left", "right")}
    assert expected <= set(edges_of(after))
    assert fact.diff["retired"] == ["merge"]
    assert fact.cost == {"nodes": 2, "edges": 6, "depth": 1, "breadth": 1, "operations": 1}


def test_new_ids_are_namespaced_by_the_anchor_and_must_be_fresh():
    state = graph()
    first = decide(state, proposal("rewriter", ["x"]))
    after = applied(state, first)
    again = decide(after, proposal("rewriter", ["x"]), attempt=2)
    assert (again.code, again.check) == ("invalid_rewrite", "topology.fresh")
    assert "'rewriter:x' exists already" in again.reason


@pytest.mark.parametrize("local", ["a:b", "has space", "", "x" * 65])
def test_local_ids_may_not_contain_a_colon_or_break_the_pattern(local):
    fact = decide(graph(), proposal("rewriter", [local], edges=[], entry=[local], exit=[local]))
    assert (fact.code, fact.check) == ("invalid_rewrite", "spec.nodes[0].id")


# --- one test per rejection code -----------------------------------------------------------


def test_invalid_rewrite_names_the_field_and_the_proposer():
    fact = decide(graph(), {**proposal("rewriter"), "op": "delete_node"})
    assert (fact.decision, fact.code, fact.check) == ("rejected", "invalid_rewrite", "op")
    assert fact.reason.startswith("proposal by 'rewriter' failed op:")
    assert fact.rewrite_id is None and fact.diff == {}


def test_vocabulary_violation_names_the_unregistered_kind():
    fact = decide(graph(), proposal("rewriter", [("x", "oracle")]))
    assert (fact.code, fact.check) == ("vocabulary_violation", "vocabulary.spec.nodes[0].kind")
    assert "'oracle' is not registered" in fact.reason


def test_cycle_introduced_by_local_edges():
    fact = decide(
        graph(), proposal("rewriter", ["x", "y"], edges=[("x", "y"), ("y", "x")], entry=["x"])
    )
    assert (fact.code, fact.check) == ("cycle_introduced", "topology.dag")
    assert "x -> y -> x" in fact.reason


def test_rewrite_budget_exceeded_lists_the_dimension():
    fact = decide(
        graph(),
        proposal("rewriter", ["x", "y"]),
        granted={"nodes": 1, "edges": 9, "depth": 9, "breadth": 9, "operations": 9},
    )
    assert (fact.code, fact.check) == ("rewrite_budget_exceeded", "budget.nodes")
    assert "nodes needs 2, 1 left" in fact.reason
    assert fact.budget_after == fact.budget_before


def test_policy_rejected_for_settled_work():
    fact = decide(graph(), proposal("merge", ["x"]))
    assert (fact.code, fact.check) == ("policy_rejected", "policy.anchor")
    assert "only rewrites at or below itself" in fact.reason


# --- topology ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "check"),
    [
        ({"anchor": "ghost"}, "topology.anchor"),
        ({"entry": []}, "topology.entry"),
        ({"exit": ["x", "x"]}, "topology.exit"),
        ({"entry": ["nope"]}, "topology.entry"),
        ({"edges": [["x", "nope"]]}, "topology.edges[0]"),
        ({"edges": [["x", "y"], ["x", "y"]]}, "topology.edges[1]"),
    ],
)
def test_topology_problems_are_invalid_rewrites(change, check):
    raw = proposal("rewriter", ["x", "y"])
    if "anchor" in change:
        raw["anchor"] = change.pop("anchor")
    raw["spec"].update(change)
    fact = decide(graph(), raw)
    assert (fact.code, fact.check) == ("invalid_rewrite", check)


def test_a_local_node_off_every_entry_to_exit_path_is_an_orphan():
    raw = proposal("rewriter", ["x", "y", "stray"], edges=[("x", "y")], entry=["x"], exit=["y"])
    fact = decide(graph(), raw)
    assert (fact.code, fact.check) == ("invalid_rewrite", "topology.orphans")
    assert "'stray'" in fact.reason


# --- the budget ----------------------------------------------------------------------------

# two parallel nodes joined by a third: every dimension costs at least 1
DIAMOND = proposal(
    "rewriter", ["p", "q", "r"], edges=[("p", "r"), ("q", "r")], entry=["p", "q"], exit=["r"]
)


def test_static_cost_of_the_diamond():
    fact = decide(graph(), DIAMOND)
    # edges: rewriter -> p, q (2) + local (2) + r -> publish (1)
    assert fact.cost == {"nodes": 3, "edges": 5, "depth": 2, "breadth": 1, "operations": 1}


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_each_budget_dimension_exceeded_alone_rejects(dimension):
    cost = decide(graph(), DIAMOND).cost
    exact = decide(graph(), DIAMOND, granted=cost)
    assert exact.decision == "admitted"
    assert exact.budget_after == dict.fromkeys(DIMENSIONS, 0)  # an exact fit spends everything
    short = decide(graph(), DIAMOND, granted={**cost, dimension: cost[dimension] - 1})
    assert (short.code, short.check) == ("rewrite_budget_exceeded", f"budget.{dimension}")
    assert short.budget_before == short.budget_after == {**cost, dimension: cost[dimension] - 1}


def test_budget_is_shared_across_a_sessions_proposals_and_never_partially_spent():
    journal = []
    s = session(
        graph(),
        granted={"nodes": 3, "edges": 32, "depth": 6, "breadth": 4, "operations": 4},
        journal=journal,
    )
    first = s.propose(proposal("rewriter", ["x", "y"]))
    second = s.propose(proposal("rewriter:y", ["z", "w"]))
    assert first.decision == "admitted" and first.budget_after["nodes"] == 1
    assert (second.code, second.check) == ("rewrite_budget_exceeded", "budget.nodes")
    assert s.budget_remaining["nodes"] == 1
    assert [type(e).__name__ for e in journal] == ["RewriteAdmitted", "RewriteRejected"]


# --- policy --------------------------------------------------------------------------------


def test_a_form_the_stage_may_not_use_is_refused():
    policy = RewritePolicy(forms=("append_after",))
    fact = decide(graph(), proposal("rewriter", op="expand_node", mode="retain"), policy=policy)
    assert (fact.code, fact.check) == ("policy_rejected", "policy.form")


def test_a_stage_rewrites_its_pending_descendants_but_not_above_itself():
    state = graph(completed=("planner", "analyst-a", "analyst-b", "merge"))
    below = decide(state, proposal("publish", ["x"]), proposer="reviewer")
    assert below.decision == "admitted", below.reason
    above = decide(state, proposal("reviewer", ["x"]), proposer="rewriter")
    assert (above.code, above.check) == ("policy_rejected", "policy.anchor")


def test_a_stage_never_replaces_itself():
    fact = decide(graph(), proposal("rewriter", op="expand_node", mode="replace"))
    assert (fact.code, fact.check) == ("policy_rejected", "policy.anchor")
    assert "cannot replace itself" in fact.reason


def test_running_descendants_are_settled_enough_to_be_off_limits():
    state = fold([StageStarted(node_id="publish", at=at(9))], graph())
    fact = decide(state, proposal("publish", ["x"]), proposer="reviewer")
    assert (fact.code, fact.check) == ("policy_rejected", "policy.settled")


def test_attempts_are_bounded_per_stage_attempt():
    s = session(graph(), policy=RewritePolicy(attempts=2))
    s.propose({"op": "nope"})
    s.propose({"op": "nope"})
    third = s.propose(proposal("rewriter"))
    assert (third.code, third.check) == ("policy_rejected", "policy.attempts")
    assert s.attempts_left == 0


# --- all-or-nothing, ids, keys ---------------------------------------------------------------


def graph_bytes(state):
    document = SnapshotDocument.from_state(state, at(200))
    return dump_snapshot(
        SnapshotDocument(
            run_id=None, entry_time=document.entry_time, nodes=document.nodes, edges=document.edges
        )
    )


def test_a_rejected_proposal_leaves_graph_and_budget_byte_identical():
    s = session(
        graph(), granted={"nodes": 2, "edges": 32, "depth": 6, "breadth": 4, "operations": 4}
    )
    s.propose(proposal("rewriter", ["x"]))
    graph_before, budget_before = graph_bytes(s.state), json.dumps(s.budget_remaining)
    rejected = s.propose(proposal("rewriter:x", ["y", "z", "w"]))  # over the nodes budget
    assert rejected.decision == "rejected"
    assert graph_bytes(s.state) == graph_before
    assert json.dumps(s.budget_remaining) == budget_before


def test_admitted_ids_are_dense_and_monotone_and_the_fold_enforces_it():
    s = session(graph(), policy=RewritePolicy(attempts=4))
    ids = [
        s.propose(proposal(a, [n])).rewrite_id for a, n in (("rewriter", "x"), ("rewriter:x", "y"))
    ]
    s.propose({"op": "nope"})
    third = s.propose(proposal("rewriter:x:y", ["z"]))
    assert [*ids, third.rewrite_id] == [1, 2, 3]
    skipping = replace(third, rewrite_id=7, key="other")
    with pytest.raises(InvalidEvent, match="must be 4"):
        fold([RewriteAdmitted(fact=skipping, at=at(300))], s.state)


def test_a_replayed_call_id_gets_the_recorded_decision_and_admits_nothing_twice():
    journal = []
    s = session(graph(), journal=journal)
    first = s.propose(proposal("rewriter", ["x"]), call_id="call-1")
    again = s.propose(proposal("rewriter", ["x"]), call_id="call-1")
    assert again is first and first.key == "rewriter#1:call-1"
    assert len(journal) == 1 and s.attempts_left == 2
    assert len(s.state.admitted_rewrites) == 1


def test_static_cost_matches_the_recorded_diff():
    state = graph()
    fact = decide(state, DIAMOND)
    assert static_cost(parse_proposal(DIAMOND), RewriteDiff.from_dict(fact.diff)) == fact.cost


# --- a proposal built in code is held to the same rules as JSON ---------------------------


def _built(**changes):
    from cortex_agents.rewrite import LocalNode, RewriteProposal, SubgraphSpec

    spec = SubgraphSpec(nodes=(LocalNode(id="x", kind="step"),), entry=("x",), exit=("x",))
    fields = {"op": "append_after", "anchor": "rewriter", "spec": spec, **changes}
    return RewriteProposal(**fields)


def _spec(nodes, **rest):
    from cortex_agents.rewrite import LocalNode, SubgraphSpec

    local = tuple(LocalNode(id=i, kind=k, config=c) for i, k, c in nodes)
    ids = tuple(i for i, _, _ in nodes)
    return SubgraphSpec(
        nodes=local, edges=rest.get("edges", ()), entry=rest.get("entry", ids[:1]), exit=ids[-1:]
    )


@pytest.mark.parametrize(
    ("changes", "check"),
    [
        ({"op": "delete_node"}, "op"),
        ({"mode": "replace"}, "mode"),
        ({"spec": _spec([("a:b", "step", {})])}, "spec.nodes[0].id"),
        ({"spec": _spec([("x", "step", {}), ("x", "step", {})])}, "spec.nodes[1].id"),
        ({"spec": _spec([("x", ["step"], {})])}, "spec.nodes[0].kind"),
        ({"spec": _spec([("x", "step", {"o": object()})])}, "spec.nodes[0].config"),
        ({"spec": "not a spec"}, "proposal"),
        ({"spec": _spec([("x", "step", {})], entry="x")}, "spec.entry"),
        ({"spec": _spec([("x", "step", {}), ("y", "step", {})], edges=("xy",))}, "spec.edges[0]"),
    ],
)
def test_a_rewrite_proposal_object_is_checked_like_json(changes, check):
    state = graph()
    fact = decide(state, _built(**changes))
    assert (fact.decision, fact.code, fact.check) == ("rejected", "invalid_rewrite", check)
    json.dumps(fact.proposal)  # recorded as JSON whatever was built
    assert decide(state, _built()).decision == "admitted"  # the same, well built, is admitted
