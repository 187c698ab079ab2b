"""The ranking signals past the three axes, each on a hand-made run: edge support, evidence
the query or the best match names, each body once, recency from the newest candidate, and
a lexical+dense blend — each the same in both engines, run after run."""

from __future__ import annotations

import pytest

from cortex_agents.errors import InvalidArgument
from cortex_agents.memory import BM25, Blend, EmbeddingScorer, Query, WalkSpec, Weights
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.memory._entities import name_of, named, names_in
from cortex_agents.reference import query_reference
from tests.support.embedding import HashEmbedder
from tests.support.helpers import node, snapshot

SEMANTIC = Weights(graph=0, temporal=0, semantic=1)


def analyst(node_id, finding, evidence=(), minute=1):
    value = {"finding": finding, "evidence": list(evidence)}
    return node(node_id, "analyst", minute=minute, output=value)


def ranked(snap, spec, query, origin="reviewer"):
    fast = query_vectorised(snap, origin, spec, query)
    slow = query_reference(snap, origin, spec, query)
    rows = [(m.node_id, m.score, m.semantic, m.temporal) for m in fast]
    assert rows == [(m.node_id, m.score, m.semantic, m.temporal) for m in slow]
    assert rows == [
        (m.node_id, m.score, m.semantic, m.temporal)
        for m in query_vectorised(snap, origin, spec, query)
    ]  # run after run
    return fast


def test_evidence_names_are_word_runs_without_a_trailing_qualifier():
    assert name_of("Brand (play)") == ("brand",)
    assert name_of("Alexander and the Terrible, Horrible Day") == (
        "alexander", "and", "the", "terrible", "horrible", "day",
    )  # fmt: skip
    assert name_of("A") is None and name_of("") is None  # too short to name anything
    assert name_of(" ".join(["w"] * 13)) is None  # a sentence, not a name
    runs = names_in("Who wrote Brand, the play?")
    assert named(["Brand (play)"], runs) and not named(["Bran"], runs)  # whole words only
    assert not named(["Police"], names_in("ice")) and not named(["ice"], names_in("police"))


def test_edge_support_lifts_the_analyst_a_matching_analyst_built_on():
    nodes = [
        analyst("hop1", "The journal is published by the association.", minute=1),
        analyst("hop2", "Hall was the first president of the association.", minute=2),
        analyst("other", "A film about presidents.", minute=2),
        node("reviewer", "reviewer", status="running", minute=3),
    ]
    snap = snapshot(nodes, [("hop1", "hop2"), ("hop2", "reviewer"), ("other", "reviewer")])
    query = Query(text="first president", scorer=BM25())
    plain = ranked(snap, WalkSpec(weights=SEMANTIC), query)
    assert [m.node_id for m in plain][-1] == "hop1"  # shares no word: last
    spec = WalkSpec(weights=SEMANTIC, support=0.6)
    lifted = {m.node_id: m.semantic for m in ranked(snap, spec, query)}
    hop2 = {m.node_id: m.semantic for m in plain}["hop2"]
    assert lifted["hop1"] == pytest.approx(0.6 * hop2)  # 0 + 0.6 x its neighbour's axis
    assert lifted["hop2"] == pytest.approx(min(hop2 + 0.6 * 0.0, 1.0))
    assert lifted["other"] == {m.node_id: m.semantic for m in plain}["other"]  # no edge


def test_the_query_naming_evidence_and_the_bridge_each_add_their_gain():
    nodes = [
        analyst("park", "Erable Park is the stadium of Fenwick FC.", ["Erable Park"]),
        analyst("club", "The club plays in Lyonesse.", ["Fenwick FC"]),
        analyst("noise", "Another stadium hosts concerts.", ["Other Arena"]),
        node("reviewer", "reviewer", status="running", minute=3),
    ]
    snap = snapshot(nodes, [(n.id, "reviewer") for n in nodes[:3]])
    query = Query(text="Which city hosts the club whose stadium is Erable Park?", scorer=BM25())
    base = {m.node_id: m.semantic for m in ranked(snap, WalkSpec(weights=SEMANTIC), query)}
    named_only = WalkSpec(weights=SEMANTIC, named_evidence=0.2)
    got = {m.node_id: m.semantic for m in ranked(snap, named_only, query)}
    assert got["park"] == pytest.approx(base["park"] + 0.2)  # the question names its evidence
    assert (got["club"], got["noise"]) == (base["club"], base["noise"])
    both = ranked(snap, WalkSpec(weights=SEMANTIC, named_evidence=0.2, bridge=0.15), query)
    assert both[0].node_id == "park"
    got = {m.node_id: m.semantic for m in both}
    assert got["club"] == pytest.approx(base["club"] + 0.15)  # the best match names "Fenwick FC"
    assert got["noise"] == base["noise"]
    with pytest.raises(InvalidArgument):
        WalkSpec(bridge=1.5)


def test_each_body_ranks_once_and_repeats_keep_their_order_after_the_rest():
    text = "Payroll filings show 1,240 employees."
    nodes = [
        analyst("r1.a", text, minute=1),
        analyst("r2.a", text, minute=10),
        analyst("a", text, minute=30),
        analyst("b", "Emissions fell by a fifth.", minute=31),
        analyst("c", "", minute=32),
        analyst("d", "", minute=33),
        node("reviewer", "reviewer", status="running", minute=34),
    ]
    snap = snapshot(nodes, [(n.id, "reviewer") for n in nodes[:6]])
    query = Query(text="payroll employees", scorer=BM25())
    spec = WalkSpec(weights=Weights(graph=0, temporal=1, semantic=2), time_scale=600)
    assert [m.node_id for m in ranked(snap, spec, query)][:3] == ["a", "r2.a", "r1.a"]
    distinct = WalkSpec(
        weights=Weights(graph=0, temporal=1, semantic=2), time_scale=600, distinct_bodies=True
    )
    # the newest copy keeps its place; the older copies go after every new body; empty bodies
    # are never repeats
    assert [m.node_id for m in ranked(snap, distinct, query)] == [
        "a", "d", "c", "b", "r2.a", "r1.a"
    ]  # fmt: skip
    limited = ranked(snap, WalkSpec(weights=distinct.weights, time_scale=600, distinct_bodies=True,
                                    limit=2), query)  # fmt: skip
    assert [m.node_id for m in limited] == ["a", "d"]


def test_recency_from_the_newest_candidate_keeps_old_runs_apart():
    nodes = [
        analyst("old", "x", minute=0),
        analyst("new", "y", minute=60),
        node("reviewer", "reviewer", status="running", minute=61),
    ]
    snap = snapshot(nodes, [("old", "reviewer"), ("new", "reviewer")], minute=60 * 24 * 365)
    temporal = Weights(graph=0, temporal=1, semantic=0)
    seed = {m.node_id: m.temporal for m in ranked(snap, WalkSpec(weights=temporal), Query())}
    assert max(seed.values()) < 2e-4  # a year later, everything scores ~0
    spec = WalkSpec(weights=temporal, time_reference="newest")
    newest = {m.node_id: m.temporal for m in ranked(snap, spec, Query())}
    assert newest == {"new": 1.0, "old": 0.5}  # one hour older at a one-hour scale


def test_a_lexical_and_dense_blend_is_the_weighted_mean_of_its_parts():
    dense = EmbeddingScorer(HashEmbedder())
    nodes = [
        analyst("a", "Heinkel HD 23 fighter"),
        analyst("b", "Heinkel HD 32 trainer"),
        node("reviewer", "reviewer", status="running", minute=3),
    ]
    snap = snapshot(nodes, [("a", "reviewer"), ("b", "reviewer")])
    spec = WalkSpec(weights=SEMANTIC)
    text = "HD23"

    def axes(scorer):
        return {m.node_id: m.semantic for m in ranked(snap, spec, Query(text=text, scorer=scorer))}

    lexical, embedded = axes(BM25()), axes(dense)
    assert lexical["a"] > lexical["b"] > 0  # the joined code and its parts; "hd" alone for b
    blend = axes(Blend([(dense, 2.0), (BM25(), 1.0)]))
    for n in ("a", "b"):
        assert blend[n] == (0.0 + 2.0 * embedded[n] + 1.0 * lexical[n]) / 3.0
