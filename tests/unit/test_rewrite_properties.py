"""Random proposals against random graphs: admission never yields a cyclic or orphaned graph
and never overspends the budget, whatever is proposed."""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cortex_agents.errors import CycleError
from cortex_agents.memory import canonical_order
from cortex_agents.rewrite import DIMENSIONS, RewritePolicy
from cortex_agents.substrate import GraphState
from tests.support.rewrite import graph, session

KINDS = ["step", "analyst", "reviewer", "oracle"]  # "oracle" is not registered


@st.composite
def dags(draw):
    """A random DAG of 2..8 nodes; a prefix of its canonical order is completed."""
    size = draw(st.integers(2, 8))
    ids = [f"n{i}" for i in range(size)]
    edges = [
        (ids[i], ids[j])
        for i in range(size)
        for j in range(i + 1, size)
        if draw(st.booleans()) and draw(st.booleans())
    ]
    for j in range(1, size):  # keep it connected enough to be interesting
        if not any(t == ids[j] for _, t in edges):
            edges.append((ids[draw(st.integers(0, j - 1))], ids[j]))
    settled = draw(st.integers(0, size - 2))
    return graph(edges, completed=ids[:settled]), ids, settled


MUTATIONS = [
    "none",
    "none",
    "none",
    "colon_id",
    "duplicate_id",
    "unknown_kind",
    "back_edge",
    "empty_entry",
    "orphan",
    "bad_op",
    "bad_mode",
    "any_anchor",
]


@st.composite
def proposals(draw, anchors, everything):
    """A well-formed proposal anchored where the proposer may, then at most one fault injected."""
    n = draw(st.integers(1, 4))
    local = [f"l{draw(st.integers(0, 5))}{i}" for i in range(n)]
    pairs = [(local[i], local[j]) for i in range(n) for j in range(i + 1, n) if draw(st.booleans())]
    has_pred, has_succ = {t for _, t in pairs}, {s for s, _ in pairs}
    form = draw(st.sampled_from(["append_after", "expand_retain", "expand_replace"]))
    raw = {
        "op": "append_after" if form == "append_after" else "expand_node",
        "anchor": draw(st.sampled_from(anchors)),
        "spec": {
            "nodes": [{"id": i, "kind": draw(st.sampled_from(KINDS[:3]))} for i in local],
            "edges": [list(p) for p in pairs],
            "entry": [i for i in local if i not in has_pred],
            "exit": [i for i in local if i not in has_succ],
        },
    }
    if form != "append_after":
        raw["mode"] = form.removeprefix("expand_")
    spec = raw["spec"]
    match draw(st.sampled_from(MUTATIONS)):
        case "colon_id":
            spec["nodes"][0]["id"] = "x:y"
        case "duplicate_id":
            spec["nodes"].append(dict(spec["nodes"][0]))
        case "unknown_kind":
            spec["nodes"][-1]["kind"] = "oracle"
        case "back_edge" if pairs:
            spec["edges"].append([pairs[0][1], pairs[0][0]])
        case "empty_entry":
            spec["entry"] = []
        case "orphan":
            spec["nodes"].append({"id": "stray", "kind": "step"})
        case "bad_op":
            raw["op"] = "rename"
        case "bad_mode":
            raw["mode"] = "merge"
        case "any_anchor":
            raw["anchor"] = draw(st.sampled_from([*everything, "ghost"]))
    return raw


def assert_acyclic(state: GraphState) -> None:
    relation = {n: list(state.successors(n)) for n in state.nodes}
    try:
        canonical_order(relation)
    except CycleError as exc:  # pragma: no cover - the failure this test exists to catch
        raise AssertionError(f"cycle {exc.cycle}") from None


def assert_no_orphans(before: GraphState, after: GraphState, fact) -> None:
    """Each new node is wired in: a predecessor unless its anchor region had none upstream,
    a successor unless it ends the rewrite where the anchor ended the graph."""
    diff = fact.diff
    anchor = diff["anchor"]
    upstream = before.predecessors(anchor) if diff["mode"] == "replace" else (anchor,)
    downstream = before.successors(anchor)
    for added in diff["nodes"]:
        node = added["id"]
        if not after.predecessors(node):
            assert node in diff["entry"] and not upstream, node
        if not after.successors(node):
            assert node in diff["exit"] and not downstream, node
    for gone in diff["retired"]:
        assert after.predecessors(gone) == () and after.successors(gone) == ()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_proposals_keep_the_graph_a_dag_wired_in_and_within_budget(data):
    state, ids, settled = data.draw(dags())
    proposer = ids[settled]  # the first pending node proposes, as a running stage would
    granted = {d: data.draw(st.integers(0, 12)) for d in DIMENSIONS}
    s = session(state, proposer, granted=granted, policy=RewritePolicy(attempts=6))
    for _ in range(6):
        before = s.state
        fact = s.propose(data.draw(proposals(s.anchors(), list(before.nodes))))
        after = s.state
        event(fact.code or "admitted")
        assert_acyclic(after)
        if fact.decision == "admitted":
            assert all(fact.cost[d] <= fact.budget_before[d] for d in DIMENSIONS)
            assert fact.budget_after == {
                d: fact.budget_before[d] - fact.cost[d] for d in DIMENSIONS
            }
            assert_no_orphans(before, after, fact)
        else:
            assert list(after.edges) == list(before.edges)
            assert dict(after.nodes) == dict(before.nodes)
            assert fact.budget_after == fact.budget_before
    spent = s.state.budget_spent()
    assert all(spent.get(d, 0) <= granted[d] for d in DIMENSIONS)
    assert [f.rewrite_id for f in s.state.admitted_rewrites] == list(
        range(1, len(s.state.admitted_rewrites) + 1)
    )
