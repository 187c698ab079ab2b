"""The scorer registry, embedding scorers over a fake embedder, the in-memory cache,
and scorer selection through presets, strategies, handles, wires and wire files."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from cortex_agents.errors import InvalidArgument, InvalidWire, ScorerUnavailable, UnknownScorer
from cortex_agents.memory import (
    BUILTIN_PRESETS,
    BUILTIN_SCORERS,
    DEFAULT_SCORER,
    Blend,
    EmbeddingScorer,
    InMemoryEmbeddingCache,
    MemoryHandle,
    Preset,
    Query,
    ScorerEntry,
    ScorerRegistry,
    Topological,
    WalkSpec,
    Weights,
    body_key,
    token_jaccard,
)
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.memory._fields import fields_of
from cortex_agents.reference import query_reference
from cortex_agents.runtime import WireBuilder, load_wire
from tests.support.embedding import HashEmbedder
from tests.support.helpers import node, snapshot

SEMANTIC_ONLY = WalkSpec(weights=Weights(graph=0, temporal=0, semantic=1))


def fanout():
    """planner -> a, b -> reviewer; a and b say different things."""
    return snapshot(
        [
            node("planner", "planner", minute=0, output={"plan": "split the claim"}),
            node(
                "a", "analyst", minute=1, output={"finding": "supplier audit found late payments"}
            ),
            node("b", "analyst", minute=2, output={"finding": "headcount rose in spring"}),
            node("reviewer", "reviewer", minute=3, status="running"),
        ],
        [("planner", "a"), ("planner", "b"), ("a", "reviewer"), ("b", "reviewer")],
    )


def registry_with(*entries):
    return BUILTIN_SCORERS.with_scorers(*entries)


def test_builtin_registry_names_and_default():
    assert set(BUILTIN_SCORERS) == {
        "jaccard", "bm25", "bm25-view", "wordllama", "minilm", "bge",
        "wordllama+bm25", "minilm+bm25", "bge+bm25", "hybrid",
    }  # fmt: skip
    assert BUILTIN_SCORERS.load("jaccard") is token_jaccard
    assert DEFAULT_SCORER == "wordllama+bm25"
    default = BUILTIN_SCORERS.load(DEFAULT_SCORER)
    assert [(type(p).__name__, w) for p, w in default.parts] == [
        ("EmbeddingScorer", 2.0), ("BM25", 1.0)
    ]  # fmt: skip
    assert all(BUILTIN_PRESETS[name].scorer in BUILTIN_SCORERS for name in BUILTIN_PRESETS)


def test_unknown_scorer_lists_the_known_ones():
    with pytest.raises(UnknownScorer) as caught:
        BUILTIN_SCORERS.load("tf-idf")
    assert caught.value.code == "unknown_scorer"
    assert "'jaccard'" in str(caught.value)


def test_a_missing_package_names_the_scorer_and_how_to_install_it():
    scorers = registry_with(
        ScorerEntry(name="ghost", load="no_such_package_xyz:make", install="pip install ghost")
    )
    with pytest.raises(ScorerUnavailable) as caught:
        scorers.load("ghost")
    message = str(caught.value)
    assert "'ghost'" in message and "pip install ghost" in message
    assert "No module named 'no_such_package_xyz'" in message


def test_a_factory_that_raises_is_unavailable_not_a_crash():
    def corrupt():
        raise ValueError("model file is corrupt")

    scorers = registry_with(ScorerEntry(name="broken", load=corrupt, install="reinstall it"))
    with pytest.raises(ScorerUnavailable, match=r"corrupt.*reinstall it"):
        scorers.load("broken")


def test_with_scorers_returns_a_new_registry_and_refuses_silent_replacement():
    mine = ScorerEntry(name="mine", scorer=token_jaccard)
    bigger = BUILTIN_SCORERS.with_scorers(mine)
    assert "mine" in bigger and "mine" not in BUILTIN_SCORERS
    with pytest.raises(InvalidArgument, match="already exists"):
        bigger.with_scorers(mine)
    assert bigger.with_scorers(mine, replace_existing=True)["mine"] is mine


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": "bad name!", "scorer": token_jaccard},
        {"name": "two", "scorer": token_jaccard, "load": "a:b"},
        {"name": "none"},
        {"name": "nocolon", "load": "module_only"},
    ],
)
def test_scorer_entry_rules(kwargs):
    with pytest.raises(InvalidArgument):
        ScorerEntry(**kwargs)


def test_a_blend_is_the_weighted_mean_of_its_parts_and_loads_once():
    scorers = ScorerRegistry(
        [
            ScorerEntry(name="jaccard", scorer=token_jaccard),
            ScorerEntry(name="half", scorer=lambda q, b: 0.5),
            ScorerEntry(name="mix", parts={"jaccard": 1.0, "half": 3.0}),
        ]
    )
    mix = scorers.load("mix")
    assert isinstance(mix, Blend)
    # jaccard("a b", "a c") = 1/3; (1 * 1/3 + 3 * 0.5) / 4
    assert mix("a b", "a c") == pytest.approx((1 / 3 + 1.5) / 4)
    assert scorers.load("mix") is mix
    assert mix.parts[1][0] is scorers.load("half")  # a blend shares its parts' instances


def test_a_blend_cycle_is_unavailable():
    scorers = ScorerRegistry(
        [ScorerEntry(name="x", parts={"y": 1.0}), ScorerEntry(name="y", parts={"x": 1.0})]
    )
    with pytest.raises(ScorerUnavailable, match="cycle"):
        scorers.load("x")


def test_cache_is_bounded_and_keeps_the_first_vector():
    cache = InMemoryEmbeddingCache(max_entries=2)
    one, two = np.ones(2, dtype=np.float32), np.full(2, 2, dtype=np.float32)
    cache.put_many("m", {"k1": one})
    cache.put_many("m", {"k1": two, "k2": two})
    assert cache.get_many("m", ["k1"])["k1"].tolist() == [1.0, 1.0]  # vectors never change
    cache.put_many("m", {"k3": one})  # k2 is least recently used now
    assert set(cache.get_many("m", ["k1", "k2", "k3"])) == {"k1", "k3"}
    assert cache.get_many("other", ["k1"]) == {}
    with pytest.raises(InvalidArgument):
        InMemoryEmbeddingCache(max_entries=0)


def test_cache_keeps_its_own_copy_of_each_vector_not_a_view_of_the_batch():
    cache = InMemoryEmbeddingCache()
    batch = np.arange(8, dtype=np.float32).reshape(4, 2)
    cache.put_many("m", {"k0": batch[0], "k3": batch[3]})
    kept = cache.get_many("m", ["k0", "k3"])
    assert all(v.base is None and v.flags.owndata for v in kept.values())  # the batch can go
    batch[:] = -1.0
    assert kept["k3"].tolist() == [6.0, 7.0]


def test_embedding_scorer_embeds_each_body_once_and_empty_bodies_never():
    embedder = HashEmbedder()
    scorer = EmbeddingScorer(embedder)
    first = scorer.document_matrix(["alpha beta", "", "alpha beta", "gamma"])
    assert embedder.calls == ["alpha beta", "gamma"]
    assert not first[1].any()  # empty body: zero vector, semantic 0
    assert np.allclose(np.linalg.norm(first[[0, 2, 3]], axis=1), 1.0)
    again = scorer.document_matrix(["gamma", "alpha beta"])
    assert embedder.calls == ["alpha beta", "gamma"]  # served from the cache
    assert np.array_equal(again[0], first[3])


def test_scorers_sharing_a_cache_share_vectors():
    cache = InMemoryEmbeddingCache()
    EmbeddingScorer(HashEmbedder(), cache=cache).document_matrix(["alpha"])
    second = HashEmbedder()
    EmbeddingScorer(second, cache=cache).document_matrix(["alpha"])
    assert second.calls == []
    assert set(cache.get_many("hash-16", [body_key("alpha")])) == {body_key("alpha")}


def test_cosine_is_mapped_to_its_positive_part():
    class Fixed:
        model_id = "fixed"

        def embed_documents(self, texts):
            return [[1.0, 0.0] if t == "same" else [-1.0, 0.0] for t in texts]

        def embed_query(self, text):
            return [2.0, 0.0]

    scorer = EmbeddingScorer(Fixed())
    assert scorer("q", "same") == 1.0
    assert scorer("q", "opposite") == 0.0  # cos -1 -> 0
    assert scorer("q", "") == 0.0


def test_embedding_scorer_rejects_malformed_embeddings():
    class Bad:
        model_id = "bad"

        def embed_documents(self, texts):
            return [[float("nan")] for _ in texts]

        def embed_query(self, text):
            return [1.0]

    with pytest.raises(InvalidArgument, match="finite"):
        EmbeddingScorer(Bad()).document_matrix(["x"])


def test_vectorised_embedding_axis_matches_reference_and_queries_embed_only_their_text():
    embedder = HashEmbedder()
    scorer = EmbeddingScorer(embedder)
    snap = fanout()
    query = Query(text="supplier audit", scorer=scorer)
    fast = query_vectorised(snap, "reviewer", SEMANTIC_ONLY, query)
    slow = query_reference(snap, "reviewer", SEMANTIC_ONLY, query)
    assert [(m.node_id, m.semantic) for m in fast] == [(m.node_id, m.semantic) for m in slow]
    assert fast[0].node_id == "a"
    embedder.calls.clear()
    query_vectorised(snap, "reviewer", SEMANTIC_ONLY, Query(text="headcount", scorer=scorer))
    assert embedder.calls == ["headcount"]  # bodies come from the index's matrix


def test_exclude_kinds_drops_those_kinds_in_both_engines():
    snap = fanout()
    query = Query(exclude_kinds={"planner"})
    for engine in (query_vectorised, query_reference):
        assert {m.node_id for m in engine(snap, "reviewer", WalkSpec(), query)} == {"a", "b"}
    with pytest.raises(InvalidArgument) as caught:
        Query(exclude_kinds="planner")
    assert caught.value.field == "exclude_kinds"


def test_preset_names_its_scorer_and_kind_filters():
    marker = lambda q, b: 0.25 if "audit" in b else 0.0  # noqa: E731
    presets = BUILTIN_PRESETS.with_scorers(ScorerEntry(name="marker", scorer=marker)).with_presets(
        Preset(name="audit", spec=SEMANTIC_ONLY, scorer="marker", exclude_kinds={"planner"})
    )
    query = presets.query("audit", text="anything")
    assert query.scorer is marker and query.exclude_kinds == {"planner"}
    matches = MemoryHandle(fanout(), "reviewer", presets=presets).query(SEMANTIC_ONLY, query)
    assert [(m.node_id, m.semantic) for m in matches] == [("a", 0.25), ("b", 0.0)]
    with pytest.raises(InvalidArgument) as caught:
        Preset(name="x", spec=WalkSpec(), scorer="")
    assert caught.value.field == "preset.scorer"


def test_topological_scorer_overrides_the_preset_for_recall_and_tool_queries():
    presets = BUILTIN_PRESETS.with_scorers(ScorerEntry(name="const", scorer=lambda q, b: 0.75))
    # the reviewer preset: two sibling analysts, no edge between them (no edge support)
    strategy = Topological(preset="reviewer", scorer="const")
    _spec, query = strategy.resolve(presets, text="focus")
    assert query.text == "focus" and query.scorer("x", "y") == 0.75
    handle = MemoryHandle(fanout(), "reviewer", presets=presets, strategy=strategy)
    assert handle.query_for("planner", text="t").scorer("x", "y") == 0.75
    assert {m.semantic for m in handle.recall(text="focus")} == {0.75}
    plain = MemoryHandle(fanout(), "reviewer", presets=presets, strategy=Topological())
    assert plain.query_for("default").scorer is presets.scorer("default")


def _wire(memory, presets=BUILTIN_PRESETS):
    return (
        WireBuilder("w", presets=presets)
        .kind("step", lambda ctx: {})
        .stage("s", "step")
        .stage("t", "step", after=["s"], memory=memory)
        .build()
    )


def test_wire_validation_loads_scorers_and_reports_failures_with_install_hint():
    presets = BUILTIN_PRESETS.with_scorers(
        ScorerEntry(name="ghost", load="no_such_package_xyz:make", install="pip install ghost")
    ).with_presets(Preset(name="haunted", spec=WalkSpec(), scorer="ghost"))
    with pytest.raises(InvalidWire) as caught:
        _wire(Topological(), presets)  # the tool may pick `haunted`: its scorer must load
    [problem] = caught.value.problems
    assert problem.location == "presets.haunted.scorer"
    assert "pip install ghost" in problem.message
    with pytest.raises(InvalidWire) as caught:
        _wire(Topological(scorer="nope"))
    assert caught.value.problems[0].location == "stages[1].memory.scorer"
    # A wire with classic stages only loads no scorer at all.
    classic = WireBuilder("c", presets=presets).kind("step", lambda ctx: {}).stage("s", "step")
    assert classic.build().name == "c"


def test_toml_wire_registers_scorers_and_selects_them(tmp_path):
    (tmp_path / "scorers_here.py").write_text(
        "def make():\n    return lambda q, b: 0.5\n", encoding="utf-8"
    )
    (tmp_path / "wire.toml").write_text(
        """
name = "w"
[kinds]
step = "tests.support.embedding:noop_stage"
[scorers.half]
load = "scorers_here.py:make"
[scorers.mixed]
parts = { half = 1, jaccard = 1 }
[presets.mine]
scorer = "mixed"
exclude_kinds = ["step"]
[[stages]]
id = "s"
kind = "step"
[[stages]]
id = "t"
kind = "step"
after = ["s"]
memory = { strategy = "topological", preset = "mine", scorer = "half" }
""",
        encoding="utf-8",
    )
    wire = load_wire(tmp_path / "wire.toml")
    assert wire.stage("t").memory.scorer == "half"
    assert wire.presets["mine"].scorer == "mixed"
    assert wire.presets["mine"].exclude_kinds == {"step"}
    assert isinstance(wire.presets.scorer("mine"), Blend)
    assert wire.presets.scorers.load("half")("q", "b") == 0.5


def test_toml_wire_with_an_unloadable_scorer_is_invalid_at_load(tmp_path):
    (tmp_path / "wire.yaml").write_text(
        """
name: w
kinds: {step: "tests.support.embedding:noop_stage"}
scorers:
  ghost: {load: "no_such_package_xyz:make", install: "pip install ghost"}
presets:
  mine: {scorer: ghost}
stages:
  - {id: s, kind: step}
  - {id: t, kind: step, after: [s], memory: {strategy: topological, preset: mine}}
""",
        encoding="utf-8",
    )
    with pytest.raises(InvalidWire) as caught:
        load_wire(tmp_path / "wire.yaml")
    assert [p.location for p in caught.value.problems] == ["presets.mine.scorer"]
    assert "pip install ghost" in caught.value.problems[0].message


def test_a_wire_with_an_embedding_cache_shares_it_with_every_embedding_scorer():
    cache = InMemoryEmbeddingCache()
    presets = BUILTIN_PRESETS.with_scorers(
        ScorerEntry(name="hash", scorer=EmbeddingScorer(HashEmbedder()))
    ).with_presets(Preset(name="hashed", spec=SEMANTIC_ONLY, scorer="hash"))
    wire = _wire(Topological(preset="hashed"), presets).with_embedding_cache(cache)
    assert wire.presets.scorers.cache is cache and wire.stage("t").memory.preset == "hashed"
    handle = MemoryHandle(fanout(), "reviewer", presets=wire.presets)
    handle.query(SEMANTIC_ONLY, handle.query_for("hashed", text="audit"))
    assert len(cache) == 3  # planner, a, b: bodies went to the wire's cache


def _bodies_snapshot(bodies):
    ids = [f"n{i}" for i in range(len(bodies))]
    return snapshot(ids, [], outputs={i: {"finding": b} for i, b in zip(ids, bodies, strict=True)})


def _array_bytes(root):
    """Bytes of numpy data reachable from ``root`` (each array once)."""
    seen, stack, total = set(), [root], 0
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, type):
            continue
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            total += item.nbytes
        elif not isinstance(item, weakref.ref):  # a lent row's index is not the cache's
            stack.extend(gc.get_referents(item))
    return total


LENT_BODIES = ["dose effect", "placebo risk", "cohort bias", "dose effect", "trial gain"]


def test_an_index_lends_its_rows_so_the_cache_keeps_no_copy_of_them():
    from cortex_agents.memory import default_extractor

    cache = InMemoryEmbeddingCache()
    scorer = EmbeddingScorer(HashEmbedder(), cache=cache)
    fields = fields_of(_bodies_snapshot(LENT_BODIES).index, default_extractor)
    matrix = fields.vectors(scorer)
    assert len(cache) == 4 and matrix.shape == (5, 16)  # one entry per distinct body
    assert _array_bytes(cache) == 0  # before: 4 vectors of 16 float32 each, copied
    got = cache.get_many("hash-16", [body_key(b) for b in LENT_BODIES])
    for i, body in enumerate(LENT_BODIES):
        assert got[body_key(body)].tobytes() == matrix[i].tobytes()  # the index's very bits


def test_a_second_index_embeds_nothing_while_the_first_lives_and_again_once_it_is_gone():
    from cortex_agents.memory import default_extractor

    embedder = HashEmbedder()
    scorer = EmbeddingScorer(embedder)
    first = _bodies_snapshot(LENT_BODIES)
    before = fields_of(first.index, default_extractor).vectors(scorer)
    assert len(embedder.calls) == 4
    second = _bodies_snapshot(LENT_BODIES)  # another index of the same bodies, made by hand
    again = fields_of(second.index, default_extractor).vectors(scorer)
    assert len(embedder.calls) == 4 and again.tobytes() == before.tobytes()
    del first, second
    gc.collect()  # both lending indexes are gone: their entries are misses now
    third = fields_of(_bodies_snapshot(LENT_BODIES).index, default_extractor).vectors(scorer)
    assert len(embedder.calls) == 8 and third.tobytes() == before.tobytes()


def test_lent_rows_count_toward_the_bound_and_replace_a_stored_copy():
    class Rows:
        def __init__(self, rows):
            self.rows = rows

        def take(self, at):
            return self.rows[at]

    cache = InMemoryEmbeddingCache(max_entries=2)
    source = Rows(np.arange(6, dtype=np.float32).reshape(3, 2))
    cache.put_many("m", {"k0": np.full(2, 9, dtype=np.float32)})
    cache.lend("m", {"k0": 0, "k1": 1, "k2": 2}, source)  # k0's copy gives way to the row
    assert len(cache) == 2 and set(cache.get_many("m", ["k0", "k1", "k2"])) == {"k1", "k2"}
    assert cache.get_many("m", ["k2"])["k2"].tolist() == [4.0, 5.0]
    del source
    gc.collect()
    assert cache.get_many("m", ["k1", "k2"]) == {} and len(cache) == 0


class _RowsOf:
    def __init__(self, rows):
        self.rows = rows

    def take(self, at):
        return self.rows[at]


def test_a_vector_put_after_its_lending_index_is_gone_is_kept():
    cache = InMemoryEmbeddingCache()
    source = _RowsOf(np.arange(4, dtype=np.float32).reshape(2, 2))
    cache.lend("m", {"k0": 0, "k1": 1}, source)
    del source
    gc.collect()  # its entries now point nowhere: nobody has read them since
    cache.put_many("m", {"k0": np.array([7.0, 8.0], dtype=np.float32)})
    assert cache.get_many("m", ["k0"])["k0"].tolist() == [7.0, 8.0]  # before: lost, a miss


def test_a_lent_row_seen_by_a_read_is_returned_though_its_index_goes_away_meanwhile():
    # stands in for another thread dropping the last reference to the lending index while
    # a read is under way: here the read's next key, compared, drops it
    cache = InMemoryEmbeddingCache()
    holder = [_RowsOf(np.arange(4, dtype=np.float32).reshape(2, 2))]
    cache.lend("m", {"k0": 0}, holder[0])
    cache.put_many("m", {"k1": np.ones(2, dtype=np.float32)})

    class Dropping(str):
        __hash__ = str.__hash__

        def __eq__(self, other):
            holder.clear()  # the index's last reference goes
            return str.__eq__(self, other)

    got = cache.get_many("m", ["k0", Dropping("k1")])
    assert not holder
    assert got["k0"].tolist() == [0.0, 1.0]  # before: a hit seen under the lock, then dropped
