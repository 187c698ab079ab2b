"""The pipeline's steps one at a time, on both engines."""

import math
from dataclasses import replace

import pytest

from cortex_agents.errors import CycleError, UnknownNode
from cortex_agents.memory import MemoryHandle, MemorySnapshot, Query, WalkSpec, Weights
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.reference import query_reference
from cortex_agents.substrate import EdgeRecord
from tests.support.helpers import at, node, snapshot

ENGINES = [query_reference, query_vectorised]


def ids(matches):
    return [m.node_id for m in matches]


@pytest.fixture
def claim_review():
    """planner -> analyst-a/b/c -> merge -> reviewer -> rewriter."""

    def analysis(ref: str, text: str) -> dict:
        return {"contract": "analysis", "value": {"claim_ref": ref, "finding": text}}

    nodes = [
        node("planner", minute=0, output={"contract": "plan", "value": {"claim": "remote work"}}),
        node("analyst-a", minute=5, output=analysis("c1", "a trial found gains")),
        node("analyst-b", minute=6, output=analysis("c2", "surveys show focus")),
        node("analyst-c", minute=7, output=analysis("c3", "selection bias is likely")),
        node("merge", minute=8, output={"contract": "merged", "value": {"summary": "mixed"}}),
        node("reviewer", minute=9, output={"verdict": "gap in c3"}),
        node("rewriter", status="running", minute=10),
    ]
    edges = [
        ("planner", "analyst-a"),
        ("planner", "analyst-b"),
        ("planner", "analyst-c"),
        ("analyst-a", "merge"),
        ("analyst-b", "merge"),
        ("analyst-c", "merge"),
        ("merge", "reviewer"),
        ("reviewer", "rewriter"),
    ]
    return MemorySnapshot.of(nodes, edges, at(10))


@pytest.mark.parametrize("engine", ENGINES)
def test_routing_key_filter_is_exact_and_falls_back_to_kind(engine, claim_review):
    assert ids(engine(claim_review, "rewriter", query=Query(routing_key="c2"))) == ["analyst-b"]
    assert ids(engine(claim_review, "rewriter", query=Query(routing_key="c"))) == []
    # no routing field in the merge output: its routing key is its kind
    assert ids(engine(claim_review, "rewriter", query=Query(routing_key="merge"))) == ["merge"]


@pytest.mark.parametrize("engine", ENGINES)
def test_kinds_filter(engine, claim_review):
    ranked = engine(claim_review, "rewriter", query=Query(kinds={"analyst", "planner"}))
    assert sorted(ids(ranked)) == ["analyst-a", "analyst-b", "analyst-c", "planner"]


@pytest.mark.parametrize("engine", ENGINES)
def test_past_boundary_reaches_the_analyst_branches_behind_the_merge(engine, claim_review):
    spec = WalkSpec(past_boundary="merge")
    ranked = engine(claim_review, "rewriter", spec, Query(kinds={"analyst"}))
    assert sorted(ids(ranked)) == ["analyst-a", "analyst-b", "analyst-c"]
    beyond = engine(claim_review, "rewriter", spec)
    assert "merge" not in ids(beyond) and "reviewer" not in ids(beyond)
    assert "planner" in ids(beyond)
    # hops and influence stay measured from the origin
    assert {m.hops for m in ranked} == {3}


@pytest.mark.parametrize("engine", ENGINES)
def test_past_boundary_without_such_a_node_recalls_nothing(engine, claim_review):
    assert engine(claim_review, "rewriter", WalkSpec(past_boundary="auditor")) == ()


@pytest.mark.parametrize("engine", ENGINES)
def test_max_distance_cuts_by_hops_before_scoring(engine, claim_review):
    ranked = engine(claim_review, "rewriter", WalkSpec(max_distance=2))
    assert sorted(ids(ranked)) == ["merge", "reviewer"]


@pytest.mark.parametrize("engine", ENGINES)
def test_scope(engine, claim_review):
    # from the planner, descendants: the running rewriter only shows in debug scope
    settled = engine(claim_review, "planner", WalkSpec(direction="descendants"))
    debug = engine(
        claim_review, "planner", WalkSpec(direction="descendants", scope="debug_all_statuses")
    )
    assert "rewriter" not in ids(settled)
    assert set(ids(debug)) - set(ids(settled)) == {"rewriter"}


@pytest.mark.parametrize("engine", ENGINES)
def test_score_is_the_normalised_weighted_mean(engine, claim_review):
    weights = Weights(graph=2, temporal=1, semantic=1)
    for m in engine(
        claim_review, "rewriter", WalkSpec(weights=weights), Query(text="selection bias")
    ):
        expected = (2 * m.graph + 1 * m.temporal + 1 * m.semantic) / 4
        assert m.score == pytest.approx(expected, abs=1e-15)
        assert 0 <= m.score <= 1


@pytest.mark.parametrize("engine", ENGINES)
def test_temporal_axis_is_one_over_one_plus_age_in_time_scales(engine, claim_review):
    ranked = engine(claim_review, "rewriter", WalkSpec(time_scale=60))
    by_id = {m.node_id: m for m in ranked}
    # planner settled at minute 0, the snapshot is at minute 10: 600 s / 60 s = 10
    assert by_id["planner"].temporal == 1 / (1 + 10)
    assert by_id["reviewer"].temporal == 1 / (1 + 1)


@pytest.mark.parametrize("engine", ENGINES)
def test_age_is_never_negative(engine):
    # a node completed after the snapshot's reference time counts as age 0
    snap = MemorySnapshot.of([node("a", minute=30), node("b", minute=0)], [("a", "b")], at(10))
    (match,) = engine(snap, "b")
    assert match.temporal == 1.0


@pytest.mark.parametrize("engine", ENGINES)
def test_semantic_axis_is_token_jaccard_and_zero_without_text(engine, claim_review):
    by_id = {
        m.node_id: m for m in engine(claim_review, "rewriter", query=Query(text="Selection BIAS"))
    }
    # body "c3 selection bias is likely": 2 shared of 5 distinct tokens
    assert by_id["analyst-c"].semantic == 2 / 5
    assert by_id["planner"].semantic == 0.0
    plain = engine(claim_review, "rewriter")
    assert all(m.semantic == 0.0 for m in plain)


@pytest.mark.parametrize("engine", ENGINES)
def test_custom_scorer_nan_counts_as_zero_and_out_of_range_is_clamped(engine, claim_review):
    def scorer(query: str, body: str) -> float:
        return math.nan if "bias" in body else 7.0

    ranked = engine(claim_review, "rewriter", query=Query(text="x", scorer=scorer))
    by_id = {m.node_id: m for m in ranked}
    assert by_id["analyst-c"].semantic == 0.0
    assert by_id["analyst-a"].semantic == 1.0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_scorer_subclassing_token_jaccard_is_called_not_bypassed(engine, claim_review):
    from cortex_agents.memory import TokenJaccard

    class Flat(TokenJaccard):
        def __call__(self, query: str, body: str) -> float:
            return 0.25

    ranked = engine(claim_review, "rewriter", query=Query(text="trial", scorer=Flat()))
    assert ranked and {m.semantic for m in ranked} == {0.25}


@pytest.mark.parametrize(
    "weights", [(1.7e308, 1.7e308, 0.0), (1e308, 1e308, 1e308), (math.inf, 1.0, 1.0)]
)
def test_weights_whose_sum_overflows_are_refused(weights):
    from cortex_agents.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="weights"):
        Weights(**dict(zip(("graph", "temporal", "semantic"), weights, strict=True)))
    Weights(graph=1e307, temporal=1e307, semantic=1e307)  # large but finite: fine


@pytest.mark.parametrize("engine", ENGINES)
def test_total_sort_breaks_ties_by_hops_then_node_id_code_points(engine):
    # all graph-only ties; ids differ in case: code point order puts "B" before "a"
    snap = snapshot(["o", "a", "B", "c"], [("a", "o"), ("B", "o"), ("c", "o")])
    ranked = engine(snap, "o", WalkSpec(weights=Weights(graph=1, temporal=0, semantic=0)))
    assert ids(ranked) == ["B", "a", "c"]


@pytest.mark.parametrize("engine", ENGINES)
def test_cycle_is_an_error_not_an_empty_result(engine):
    nodes = [node("a"), node("b"), node("c")]
    snap = MemorySnapshot.of(
        nodes, [EdgeRecord("a", "b"), EdgeRecord("b", "c"), EdgeRecord("c", "b")], at(1)
    )
    with pytest.raises(CycleError) as caught:
        engine(snap, "a")
    assert caught.value.cycle == ("b", "c", "b")


@pytest.mark.parametrize("engine", ENGINES)
def test_unknown_origin(engine, claim_review):
    with pytest.raises(UnknownNode, match="'ghost'"):
        engine(claim_review, "ghost")


def test_ranking_total_counts_candidates_beyond_the_limit(claim_review) -> None:
    """The limit cuts the matches, never the count of candidates that passed the filters."""
    handle = MemoryHandle(claim_review, "rewriter")
    cut = handle.rank_request(max_limit=10, limit=2)  # the one public way to the count
    full = handle.query(replace(cut.spec, limit=None), handle.query_for(cut.preset))
    assert cut.ranking.total == len(full) == 6
    assert ids(cut.ranking.matches) == ids(full)[:2]
