"""The feedback pass (a second retrieval pass reading what the first found), on a hand-made
multi-hop question whose second hop shares no entity with the question: it ranks wrong
without the pass and right with it, the same in both engines; the stage option that turns
it on; its bad input."""

from __future__ import annotations

import dataclasses
import random

import pytest

from cortex_agents.errors import InvalidArgument
from cortex_agents.memory import (
    BM25,
    Blend,
    EmbeddingScorer,
    MemoryHandle,
    Query,
    Topological,
    WalkSpec,
    Weights,
)
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.memory._feedback import FEEDBACK_SCORER, feedback_text
from cortex_agents.memory._presets import BUILTIN_PRESETS, FEEDBACK, FEEDBACK_DEPTH
from cortex_agents.reference import query_reference, semantic_axes
from tests.support.embedding import HashEmbedder
from tests.support.helpers import call_memory_tool, node, snapshot

QUESTION = "What currency predated the Euro in the country Signmark is from?"
BODIES = {
    "signmark": "Signmark competed in Finland's national qualifications for the Eurovision Song "
    "Contest.",
    "markka": "The markka was the currency of Finland until the euro came, with new notes.",
    "euro": "The euro is the currency of the eurozone.",
    "lira": "The lira was the currency of Italy until the euro.",
    "peseta": "The peseta was the currency of Spain until the euro.",
}
SPEC = WalkSpec(weights=Weights(graph=0, temporal=0, semantic=1), named_evidence=0.2)


def _snapshot():
    nodes = [
        node(n, "analyst", minute=1, output={"finding": body, "evidence": [n.capitalize()]})
        for n, body in BODIES.items()
    ]
    nodes.append(node("reviewer", "reviewer", status="running", minute=3))
    return snapshot(nodes, [(n, "reviewer") for n in BODIES])


def ranked(snap, spec, query):
    fast = query_vectorised(snap, "reviewer", spec, query)
    slow = query_reference(snap, "reviewer", spec, query)
    rows = [(m.node_id, m.score, m.semantic) for m in fast]
    assert rows == [(m.node_id, m.score, m.semantic) for m in slow]  # same floats
    return fast


def test_the_feedback_query_is_the_new_salient_words_then_the_unanswered_ones():
    text = feedback_text(QUESTION, [BODIES["signmark"]])
    # "Signmark" is asked already; "Finland's" gives "finland" (and no one-letter "s"); the
    # sentence's first word is not salient by its capital; then the question's words that
    # the body does not hold, in the question's order
    assert text == "finland eurovision song contest what currency predated euro country is from"
    assert feedback_text("Signmark", ["Signmark. Signmark"]) == ""  # nothing new, nothing open
    assert feedback_text("x", ["In 1998 the HD 23 flew; B 2."]) == "1998 hd 23 x"


def test_the_second_hop_enters_the_top_three_only_with_feedback():
    snap = _snapshot()
    query = Query(text=QUESTION, scorer=BM25())
    plain = [m.node_id for m in ranked(snap, SPEC, query)]
    # the question names Signmark (the first hop); every currency shares "currency" and
    # "euro" with it, and the markka's longer paragraph scores last: out of the top 3
    assert plain[0] == "signmark" and plain.index("markka") == 4
    spec = dataclasses.replace(SPEC, feedback=2.0)
    after = ranked(snap, spec, query)
    assert [m.node_id for m in after][:3] == ["signmark", "euro", "markka"]  # Finland: the bridge
    # the gain is feedback x the BM25 axis of the feedback query over the candidates
    first = ranked(snap, SPEC, query)
    before = {m.node_id: m.semantic for m in first}
    order = list(before)
    bodies = [m.body_text for m in first]  # (what the extractor reads: finding and evidence)
    axes = semantic_axes(
        FEEDBACK_SCORER, feedback_text(QUESTION, bodies[:1]), bodies, lambda: bodies
    )
    got = {m.node_id: m.semantic for m in after}
    for n, axis in zip(order, axes, strict=True):
        assert got[n] == min(before[n] + 2.0 * axis, 1.0)


def test_feedback_reads_the_first_depth_candidates_and_is_off_by_default():
    snap = _snapshot()
    query = Query(text=QUESTION, scorer=BM25())
    assert WalkSpec().feedback == 0.0
    assert all(BUILTIN_PRESETS.spec(name).feedback == 0.0 for name in BUILTIN_PRESETS)
    one = ranked(snap, dataclasses.replace(SPEC, feedback=2.0), query)
    two = ranked(snap, dataclasses.replace(SPEC, feedback=2.0, feedback_depth=2), query)
    assert [m.semantic for m in one] != [m.semantic for m in two]  # a second body read
    assert ranked(snap, SPEC, Query(scorer=BM25())) == ranked(
        snap, dataclasses.replace(SPEC, feedback=2.0), Query(scorer=BM25())
    )  # no question, no pass


def test_a_stage_opts_in_with_second_pass_feedback():
    snap = _snapshot()
    plain = Topological(preset="reviewer")
    opted = Topological(preset="reviewer", second_pass="feedback")
    spec, _ = opted.resolve(BUILTIN_PRESETS, text=QUESTION)
    assert (spec.feedback, spec.feedback_depth) == (FEEDBACK, FEEDBACK_DEPTH)
    assert plain.resolve(BUILTIN_PRESETS)[0] == BUILTIN_PRESETS.spec("reviewer")
    bm25 = BUILTIN_PRESETS.with_presets(
        dataclasses.replace(BUILTIN_PRESETS["reviewer"], scorer="bm25"), replace_existing=True
    )
    recalled = MemoryHandle(snap, "reviewer", presets=bm25, strategy=opted).recall(QUESTION)
    baseline = MemoryHandle(snap, "reviewer", presets=bm25, strategy=plain).recall(QUESTION)
    assert "markka" in [m.node_id for m in recalled][:3]
    assert "markka" not in [m.node_id for m in baseline][:3]


def test_bad_feedback_settings_are_refused_naming_the_field():
    with pytest.raises(InvalidArgument) as error:
        WalkSpec(feedback=-0.5)
    assert error.value.field == "feedback"
    with pytest.raises(InvalidArgument) as error:
        WalkSpec(feedback=float("nan"))
    assert error.value.field == "feedback"
    with pytest.raises(InvalidArgument) as error:
        WalkSpec(feedback_depth=0)
    assert error.value.field == "feedback_depth"
    with pytest.raises(InvalidArgument) as error:
        Topological(second_pass="rerank")  # type: ignore[arg-type]
    assert error.value.field == "second_pass"


def _random_run(seed: int, n: int = 150):
    rng = random.Random(seed)
    ids = [f"n{i:03d}" for i in range(n)]
    edges = {(ids[rng.randrange(max(0, j - 20), j)], ids[j]) for j in range(1, n) for _ in "ab"}
    nodes = [
        node(
            i,
            rng.choice(["analyst", "planner"]),
            minute=k,
            output={
                "finding": "see " + " ".join(rng.sample(WORDS, 4)),
                "evidence": rng.sample(WORDS, 1),
            },
        )
        for k, i in enumerate(ids)
    ]
    return snapshot(nodes, sorted(edges), minute=n + 1), ids[-1]


WORDS = ["Finland", "markka", "currency", "euro", "Signmark", "Eurovision Song", "1860", "HD 23",
         "the", "country", "Italy", "lira", "Spain. The", "peseta", "money"]  # fmt: skip


@pytest.mark.parametrize("seed", range(6))
def test_both_engines_run_the_pass_to_the_same_floats_on_random_runs(seed):
    """Exactness (the property tests' rule) where the pass changes rankings: on every run."""
    snap, origin = _random_run(seed)
    shipped = dataclasses.replace(BUILTIN_PRESETS.spec("reviewer"), limit=None)
    blend = Blend([(BM25(), 1.0), (EmbeddingScorer(HashEmbedder()), 2.0)])
    changed = []
    for scorer, depth in ((BM25(), 1), (blend, 2), (BM25(corpus="view"), 3)):
        query = Query(text="What currency did the country of Signmark use?", scorer=scorer)
        spec = dataclasses.replace(shipped, feedback=FEEDBACK, feedback_depth=depth)
        fast = query_vectorised(snap, origin, spec, query)
        slow = query_reference(snap, origin, spec, query)
        rows = [(m.node_id, m.hops, m.score, m.graph, m.temporal, m.semantic) for m in fast]
        assert rows == [(m.node_id, m.hops, m.score, m.graph, m.temporal, m.semantic) for m in slow]
        off = query_vectorised(snap, origin, dataclasses.replace(spec, feedback=0.0), query)
        changed.append([m.semantic for m in off] != [m.semantic for m in fast])
    assert any(changed)  # the pass did something (not when the first body holds nothing new)


def _tool_call(strategy: Topological, presets):
    from cortex_agents.tools import make_memory_query_tool

    handle = MemoryHandle(_snapshot(), "reviewer", presets=presets, strategy=strategy)
    return call_memory_tool(make_memory_query_tool(presets), handle, {"query_text": QUESTION})


def test_the_model_s_tool_calls_run_the_stage_s_second_pass_and_record_it():
    presets = BUILTIN_PRESETS.with_presets(
        dataclasses.replace(BUILTIN_PRESETS["reviewer"], scorer="bm25"), replace_existing=True
    )
    opted = _tool_call(Topological(preset="reviewer", second_pass="feedback"), presets)
    plain = _tool_call(Topological(preset="reviewer"), presets)
    assert opted.artifact["query"]["second_pass"] == "feedback"
    assert "second_pass" not in plain.artifact["query"]  # older artifacts keep their keys
    top = [[m["node_id"] for m in a.artifact["matches"]][:3] for a in (opted, plain)]
    assert "markka" in top[0] and "markka" not in top[1]


def test_a_wire_file_declares_the_second_pass(tmp_path):
    from cortex_agents.errors import InvalidWire
    from cortex_agents.runtime import load_wire

    (tmp_path / "kinds.py").write_text("def run(ctx):\n    return {'finding': 'x'}\n")
    wire = """
name = "fb"
[kinds]
analyst = "kinds.py:run"
reviewer = "kinds.py:run"
[presets.deep]
feedback = 1.5
feedback_depth = 2
[[stages]]
id = "analyst-a"
kind = "analyst"
[[stages]]
id = "reviewer"
kind = "reviewer"
after = ["analyst-a"]
memory = {{ strategy = "topological", preset = "reviewer", second_pass = {value} }}
"""
    path = tmp_path / "wire.toml"
    path.write_text(wire.format(value='"feedback"'))
    loaded = load_wire(path)
    assert loaded.stage("reviewer").memory == Topological(preset="reviewer", second_pass="feedback")
    assert (loaded.presets.spec("deep").feedback, loaded.presets.spec("deep").feedback_depth) == (
        1.5,
        2,
    )
    path.write_text(wire.format(value='"rerank"'))
    with pytest.raises(InvalidWire) as caught:
        load_wire(path)
    assert [p.location for p in caught.value.problems] == ["stages[1].memory.second_pass"]
