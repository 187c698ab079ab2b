"""DESIGN §4's worked example, on both engines: influence vs hop decay."""

import pytest

from cortex_agents.memory import DEFAULT_ALPHA, WalkSpec, Weights, dag_random_walk_influence
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.reference import query_reference, relations_of
from tests.support.helpers import FANOUT_EDGES, FANOUT_NODES, snapshot

GRAPH_ONLY = Weights(graph=1, temporal=0, semantic=0)
ENGINES = [query_reference, query_vectorised]


@pytest.fixture
def fanout():
    return snapshot(FANOUT_NODES, FANOUT_EDGES)


@pytest.mark.parametrize("engine", ENGINES)
def test_influence_ranks_planner_first_with_exact_values(engine, fanout):
    matches = engine(fanout, "reviewer", WalkSpec(weights=GRAPH_ONLY))
    assert [m.node_id for m in matches] == ["planner", "analyst-a", "analyst-b", "analyst-c"]
    by_id = {m.node_id: m for m in matches}
    assert by_id["planner"].graph == pytest.approx(DEFAULT_ALPHA**2, abs=1e-15)  # 0.7225
    for analyst in ("analyst-a", "analyst-b", "analyst-c"):
        assert by_id[analyst].graph == pytest.approx(DEFAULT_ALPHA / 3, abs=1e-15)
        assert by_id[analyst].hops == 1
    assert by_id["planner"].hops == 2
    # graph-only weights: the score is the graph axis itself
    assert all(m.score == m.graph for m in matches)


@pytest.mark.parametrize("engine", ENGINES)
def test_hop_decay_ranks_analysts_first(engine, fanout):
    matches = engine(fanout, "reviewer", WalkSpec(weights=GRAPH_ONLY, prior="hop_decay"))
    assert [m.node_id for m in matches] == ["analyst-a", "analyst-b", "analyst-c", "planner"]
    assert [m.graph for m in matches] == [0.5, 0.5, 0.5, 1 / 3]


def test_influence_function_on_the_transposed_relation(fanout):
    _, backward = relations_of(fanout)
    influence = dag_random_walk_influence(backward, "reviewer")
    assert influence["reviewer"] == 1.0
    assert influence["planner"] == pytest.approx(0.7225, abs=1e-15)
    assert influence["analyst-b"] == pytest.approx(0.85 / 3, abs=1e-15)


def test_alpha_is_configurable(fanout):
    _, backward = relations_of(fanout)
    influence = dag_random_walk_influence(backward, "reviewer", alpha=0.5)
    assert influence["planner"] == pytest.approx(0.25)
    matches = query_vectorised(fanout, "reviewer", WalkSpec(weights=GRAPH_ONLY, alpha=0.5))
    assert {m.node_id: m.graph for m in matches}["planner"] == pytest.approx(0.25)
