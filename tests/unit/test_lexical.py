"""The lexical axis: the tokeniser keeps identifiers, BM25 by hand, and BM25's statistics
(and the evidence names entity signals read) kept incrementally equal a rebuild after every
step of random forked runs."""

from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_agents.errors import InvalidArgument
from cortex_agents.memory import (
    BM25,
    MemorySnapshot,
    Query,
    WalkSpec,
    default_extractor,
    lexical_tokens,
)
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.memory._fields import fields_of
from cortex_agents.memory._lexical import CorpusStats
from cortex_agents.reference import query_reference
from cortex_agents.substrate import (
    EdgeAdded,
    NodeRecord,
    NodeScheduled,
    StageCompleted,
    StageStarted,
    SubstrateLog,
    fold,
)
from tests.support.helpers import T0
from tests.support.substrate import next_event


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a season range: the parts, the range with any dash, and the other year spelling
        ("2011–12 VCU Rams", ["2011", "12", "vcu", "rams", "2011-12", "2011-2012"]),
        ("2011 - 2012", ["2011", "2012", "2011-2012", "2011-12"]),
        ("1995\u221296", ["1995", "96", "1995-96", "1995-1996"]),
        # a code: its parts and the joined form, whether written with a space, a dash or none
        ("Heinkel HD 23", ["heinkel", "hd", "23", "hd23"]),
        ("HD-23", ["hd", "23", "hd23"]),
        ("HD23", ["hd23", "hd", "23"]),
        ("B-29 bomber", ["b", "29", "bomber", "b29"]),
        ("BWV 1033", ["bwv", "1033", "bwv1033"]),
        # numbers: thousands joined, decimals kept whole, mixed runs split into parts
        ("1,240 people", ["1", "240", "people", "1240"]),
        ("3.5 percent", ["3", "5", "percent", "3.5"]),
        ("the 1990s", ["the", "1990s", "1990", "s"]),
        # unicode: casefolded (ß -> ss), NFKC (full-width digits), accents kept
        ("Straße ÉCOLE", ["strasse", "école"]),
        ("ＨＤ２３", ["hd23", "hd", "23"]),
        # lower-case words before a number are not codes; a year is one token
        ("in 1986 the film", ["in", "1986", "the", "film"]),
    ],
)
def test_the_tokeniser_keeps_identifiers_and_their_parts(text, expected):
    assert lexical_tokens(text) == expected


def test_identifiers_decide_bm25_where_their_parts_alone_do_not():
    bodies = ["The Heinkel HD 23 was a fighter", "The Heinkel HD 32 was a trainer",
              "The 2011–12 VCU Rams season", "The 2015–16 VCU Rams season"]  # fmt: skip
    scorer = BM25()
    stats = CorpusStats.of(lexical_tokens(b) for b in bodies)

    def best(query: str) -> str:
        return max(bodies, key=lambda b: scorer.axis(query, lexical_tokens(b), stats))

    assert best("Heinkel HD23") == bodies[0]
    assert best("VCU Rams 2011-2012") == bodies[2]


def test_bm25_on_a_hand_computed_corpus():
    # corpus of three documents (token counts): d1 = a a b (3), d2 = b c (2), d3 = c (1)
    docs = [["a", "a", "b"], ["b", "c"], ["c"]]
    stats = CorpusStats.of(docs)
    assert (stats.documents, stats.length, dict(stats.df)) == (3, 6, {"a": 1, "b": 2, "c": 2})
    scorer = BM25(k1=1.2, b=0.75)
    avgdl = 6 / 3
    idf_a = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))  # ln(1 + 2.5 / 1.5) = 0.9808...
    idf_b = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # ln(1.6) = 0.4700...
    assert idf_a == pytest.approx(0.98082925, abs=1e-8)
    assert idf_b == pytest.approx(0.47000363, abs=1e-8)
    # d1 for "a b": a has tf 2, b tf 1, |d1| = 3
    norm = 1.2 * (1 - 0.75 + 0.75 * 3 / avgdl)  # 1.65
    score = idf_a * 2 * 2.2 / (2 + norm) + idf_b * 1 * 2.2 / (1 + norm)
    # a: 0.98082925 * 4.4 / 3.65 = 1.18236951; b: 0.47000363 * 2.2 / 2.65 = 0.39019170
    assert score == pytest.approx(1.5725612, abs=1e-6)
    bound = (idf_a + idf_b) * 2.2  # 3.19183234
    assert score / bound == pytest.approx(0.4926829, abs=1e-6)
    assert scorer.axis("a b", docs[0], stats) == pytest.approx(score / bound, rel=1e-15)
    # d3 holds neither term; the terms are the query's distinct tokens ("b b a" = "a b")
    assert scorer.axis("a b", docs[2], stats) == 0.0
    assert scorer.axis("b b a", docs[0], stats) == scorer.axis("a b", docs[0], stats)
    # a term in every document still counts (idf never negative), a query of no token is 0
    assert scorer.axis("zzz", docs[0], stats) == 0.0
    assert scorer.axis("", docs[0], stats) == 0.0


def test_bm25_parameters_are_checked():
    for bad in ({"k1": -1}, {"k1": math.inf}, {"b": 1.5}, {"corpus": "everything"}, {"k1": True}):
        with pytest.raises(InvalidArgument):
            BM25(**bad)


def test_the_corpus_decides_the_statistics():
    t = T0
    done = {"status": "completed", "captured_at": t, "completed_at": t}
    nodes = [
        NodeRecord(id="plan", kind="planner", output={"plan": "bias bias bias"}, **done),
        NodeRecord(id="a", kind="analyst", output={"finding": "bias in the trial"}, **done),
        NodeRecord(id="b", kind="analyst", output={"finding": "gain in the trial"}, **done),
        NodeRecord(id="r", kind="reviewer", status="running", captured_at=t),
    ]
    edges = [("plan", "a"), ("plan", "b"), ("a", "r"), ("b", "r")]
    snap = MemorySnapshot.of(nodes, edges, t)
    q = {"text": "bias", "kinds": frozenset({"analyst"})}
    among = query_vectorised(snap, "r", WalkSpec(), Query(scorer=BM25(), **q))
    view = query_vectorised(snap, "r", WalkSpec(), Query(scorer=BM25(corpus="view"), **q))
    # among the two analysts "bias" is in 1 of 2; in the view (planner too) in 2 of 3
    idf_among = math.log(1 + 1.5 / 1.5)
    idf_view = math.log(1 + 1.5 / 2.5)
    assert among[0].node_id == view[0].node_id == "a"
    norm_among = 1.2 * (1 - 0.75 + 0.75 * 4 / 4)
    norm_view = 1.2 * (1 - 0.75 + 0.75 * 4 / (11 / 3))
    assert among[0].semantic == pytest.approx(
        idf_among * 2.2 / (1 + norm_among) / (idf_among * 2.2)
    )
    assert view[0].semantic == pytest.approx(idf_view * 2.2 / (1 + norm_view) / (idf_view * 2.2))


# -- incremental statistics ---------------------------------------------------------------
WORDS = ["bias", "trial", "HD 23", "HD 40", "2011–12", "gain", "the", "1,240", "Straße"]


def _with_text(event, rng: random.Random):
    if isinstance(event, StageCompleted):
        words = rng.choices(WORDS, k=rng.randint(0, 6))
        output = rng.choice(
            [{"text": " ".join(words)}, None, {"value": {"finding": " ".join(words)}}]
        )
        return dataclasses.replace(event, output=output)
    return event


def _rebuilt_statistics(state) -> tuple[CorpusStats, dict[str, Counter[str]]]:
    bodies = {
        node.id: fields.body_text if (fields := default_extractor(node.output)) else ""
        for node in state.nodes.values()
        if node.status == "completed"
    }
    stats = CorpusStats.of(lexical_tokens(b) for b in bodies.values())
    return stats, {n: Counter(lexical_tokens(b)) for n, b in bodies.items()}


def _assert_statistics_exact(log: SubstrateLog, rng: random.Random) -> None:
    captured = T0 + timedelta(hours=2)
    snapshot = MemorySnapshot.from_log(log, captured)
    view = snapshot.index
    fields = fields_of(view, default_extractor)
    with view.index.lock:
        postings = fields.fields.lexical(view.index)
        stats = postings.stats(view)
        frequencies = postings.frequencies(view)
    state = fold(list(log))
    want, want_tf = _rebuilt_statistics(state)
    assert (stats.documents, stats.length, dict(stats.df)) == (
        want.documents, want.length, {t: c for t, c in want.df.items() if c},
    )  # fmt: skip
    got_tf = {view.node_id(i): tf for i, tf in frequencies.items() if i < view.n}
    assert {n: tf for n, tf in got_tf.items() if tf} == {n: tf for n, tf in want_tf.items() if tf}
    if not snapshot.nodes:
        return
    rebuilt = MemorySnapshot.from_state(state, captured)
    origin = rng.choice(sorted(snapshot.nodes))
    for scorer in (BM25(), BM25(corpus="view")):
        spec = WalkSpec(direction=rng.choice(["ancestors", "descendants", "bidirectional"]),
                        scope=rng.choice(["settled_only", "debug_all_statuses"]),
                        named_evidence=rng.choice([0.0, 1.0]), bridge=rng.choice([0.0, 1.0]),
                        distinct_bodies=rng.choice([False, True]))  # fmt: skip
        query = Query(
            text=rng.choice(["bias HD23", "2011-2012 trial", "strasse the"]), scorer=scorer
        )
        got = [
            (m.node_id, m.semantic, m.score)
            for m in query_vectorised(snapshot, origin, spec, query)
        ]
        assert got == [
            (m.node_id, m.semantic, m.score) for m in query_reference(rebuilt, origin, spec, query)
        ]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32))
def test_incremental_lexical_statistics_equal_a_rebuild_after_every_step_with_forks(seed):
    rng = random.Random(seed)
    logs = [SubstrateLog()]
    for tick in range(40):
        base = rng.choice(logs[-5:])
        if rng.random() < 0.3 and len(base):  # an older prefix, then a fork from it
            base = base.prefix(rng.randrange(len(base) + 1))
        state, batch = base.state, []
        for step in range(rng.randint(1, 4)):
            event = _with_text(next_event(state, rng, tick * 10 + step), rng)
            state = fold([event], state)
            batch.append(event)
        log = base.appended(batch)
        _assert_statistics_exact(log, rng)
        if rng.random() < 0.3:  # an older view of the same branch stays exact as it grows
            _assert_statistics_exact(log.prefix(rng.randrange(len(log) + 1)), rng)
        logs.append(log)


def test_a_view_of_many_outputs_reads_its_statistics_without_rereading_bodies():
    rng = random.Random(3)
    log, state = SubstrateLog(), fold([])
    for tick in range(400):
        event = _with_text(next_event(state, rng, tick), rng)
        state = fold([event], state)
        log = log.appended([event])
    snapshot = MemorySnapshot.from_log(log, T0 + timedelta(hours=2))
    view = snapshot.index
    fields = fields_of(view, default_extractor)
    with view.index.lock:
        postings = fields.fields.lexical(view.index)
        done = postings.done
    # a second view of the same branch reads the same postings: nothing is tokenised again
    again = MemorySnapshot.from_log(log, T0 + timedelta(hours=3)).index
    with again.index.lock:
        assert fields_of(again, default_extractor).fields.lexical(again.index) is postings
    assert postings.done == done
    assert np.all(postings.lengths.data[: view.n] >= 0)


def test_a_node_settling_differently_on_a_fork_is_read_as_the_fork_settled_it():
    def at(s):
        return T0 + timedelta(seconds=s)

    common = [
        NodeScheduled(node_id="x", kind="analyst", at=at(0)),
        NodeScheduled(node_id="y", kind="analyst", at=at(1)),
        NodeScheduled(node_id="r", kind="reviewer", at=at(2)),
        EdgeAdded(source="x", target="r", at=at(3)),
        EdgeAdded(source="y", target="r", at=at(3)),
        StageStarted(node_id="x", at=at(4)),
        StageStarted(node_id="y", at=at(4)),
        StageCompleted(
            node_id="x", at=at(5), output={"finding": "Alpha HD 23", "evidence": ["Alpha"]}
        ),
    ]
    parent = SubstrateLog().appended(common)
    parent = parent.appended(
        [
            StageCompleted(
                node_id="y", at=at(6), output={"finding": "Bravo bravo", "evidence": ["Bravo"]}
            )
        ]
    )
    spec = WalkSpec(named_evidence=1.0, bridge=1.0)
    captured = T0 + timedelta(hours=1)
    for text in ("Bravo", "Delta", "HD23"):  # the parent's index reads every output first
        query_vectorised(
            MemorySnapshot.from_log(parent, captured), "r", spec, Query(text=text, scorer=BM25())
        )
    fork = parent.prefix(len(common)).appended(
        [StageCompleted(node_id="y", at=at(7), output={"finding": "Delta", "evidence": ["Delta"]})]
    )
    assert fork.branch is not parent.branch
    snapshot = MemorySnapshot.from_log(fork, captured)
    rebuilt = MemorySnapshot.from_state(fold(list(fork)), captured)
    for text in ("Bravo", "Delta", "HD23 delta"):
        for scorer in (BM25(), BM25(corpus="view")):
            query = Query(text=text, scorer=scorer)
            got = [
                (m.node_id, m.semantic, m.score)
                for m in query_vectorised(snapshot, "r", spec, query)
            ]
            assert got == [
                (m.node_id, m.semantic, m.score) for m in query_reference(rebuilt, "r", spec, query)
            ]
    named = query_vectorised(snapshot, "r", spec, Query(text="Bravo", scorer=BM25()))
    assert {m.node_id: m.semantic for m in named} == {"x": 0.0, "y": 0.0}
