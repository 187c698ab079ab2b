"""The opt-in diversity stage (maximal marginal relevance) on a hand-made comparison question:
the plain ranking fills its top three with one side, MMR brings the other side in, the same in
both engines; its stated tie order; the same floats across processes; the stage option and
the wire keys that turn it on; its bad input; the defaults it leaves alone."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from cortex_agents.errors import InvalidArgument, InvalidWire
from cortex_agents.memory import (
    BM25,
    BUILTIN_PRESETS,
    Blend,
    EmbeddingScorer,
    MemoryHandle,
    Query,
    Topological,
    WalkSpec,
    Weights,
)
from cortex_agents.memory._diversity import MMR_DEPTH, MMR_LAMBDA, mmr_order, token_similarity
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.reference import query_reference
from tests.support.embedding import HashEmbedder
from tests.support.helpers import call_memory_tool, node, snapshot

QUESTION = "Who was born first, Badly Drawn Boy or Wolf Alice?"
BODIES = {
    "gough": "Badly Drawn Boy, born Damon Gough, is an English singer who was born in 1969.",
    "hour": "The Hour of Bewilderbeast was the first album by Badly Drawn Boy, the English singer.",
    "about": "About a Boy was the first film with songs by Badly Drawn Boy, the English singer.",
    "wolf": "Wolf Alice are an English rock band formed in London in 2010 by Ellie Rowsell and "
    "Joff Oddie, who play guitar and write songs together on tour across the country.",
    "oddie": "Joff Oddie plays guitar in a London band.",
}
SPEC = WalkSpec(weights=Weights(graph=0, temporal=0, semantic=1))
QUERY = Query(text=QUESTION, scorer=BM25())


def _snapshot():
    nodes = [node(n, "analyst", minute=1, output={"finding": body}) for n, body in BODIES.items()]
    nodes.append(node("reviewer", "reviewer", status="running", minute=3))
    return snapshot(nodes, [(n, "reviewer") for n in BODIES])


def ranked(spec, query=QUERY, snap=None):
    snap = snap or _snapshot()
    fast = query_vectorised(snap, "reviewer", spec, query)
    slow = query_reference(snap, "reviewer", spec, query)
    rows = [(m.node_id, m.hops, m.score, m.graph, m.temporal, m.semantic) for m in fast]
    assert rows == [(m.node_id, m.hops, m.score, m.graph, m.temporal, m.semantic) for m in slow]
    return fast


def test_mmr_brings_the_other_side_of_a_comparison_into_the_top():
    plain = ranked(SPEC)
    # BM25 alone: the three "Badly Drawn Boy" paragraphs first, Wolf Alice fourth
    assert [m.node_id for m in plain] == ["gough", "about", "hour", "wolf", "oddie"]
    half = ranked(dataclasses.replace(SPEC, diversity="mmr", mmr_lambda=0.5))
    # after Gough, "about" and "hour" are too like him (Jaccard 0.29, 0.33 of lexical tokens)
    assert [m.node_id for m in half] == ["gough", "wolf", "about", "oddie", "hour"]
    default = ranked(dataclasses.replace(SPEC, diversity="mmr"))
    assert [m.node_id for m in default] == ["gough", "about", "wolf", "hour", "oddie"]
    # the stage reorders; every match keeps its first-stage floats
    before = {m.node_id: (m.score, m.semantic) for m in plain}
    assert {m.node_id: (m.score, m.semantic) for m in half} == before


def test_mmr_reorders_only_the_first_depth_and_the_limit_cuts_after_it():
    deep = ranked(dataclasses.replace(SPEC, diversity="mmr", mmr_lambda=0.5, mmr_depth=3))
    # only gough, about, hour are reordered (about: 0.29 like gough, hour: 0.33); the rest stay
    assert [m.node_id for m in deep] == ["gough", "about", "hour", "wolf", "oddie"]
    two = ranked(dataclasses.replace(SPEC, diversity="mmr", mmr_lambda=0.5, mmr_depth=2))
    assert [m.node_id for m in two] == ["gough", "about", "hour", "wolf", "oddie"]
    limited = ranked(dataclasses.replace(SPEC, diversity="mmr", mmr_lambda=0.5, limit=2))
    assert [m.node_id for m in limited] == ["gough", "wolf"]  # the first 2 of the whole order


def test_mmr_order_on_hand_computed_values_and_its_tie_order():
    # tokens: {x, y}, {x, y}, {z, w}; lam 0.5: 0 first; then 0.5*0.8 - 0.5*1.0 = -0.1 against
    # 0.5*0.7 - 0.5*0.0 = 0.35: the unlike one; then the copy
    assert mmr_order([0.9, 0.8, 0.7], ["x y", "x y", "z w"], 0.5) == [0, 2, 1]
    # equal MMR values: the first-stage order decides (here every value is equal)
    assert mmr_order([0.5, 0.5, 0.5], ["a", "b", "c"], 0.7) == [0, 1, 2]
    assert mmr_order([0.5, 0.5], ["a b", "a c"], 0.3) == [0, 1]
    # after the first, both are 2/4 like it: 0.6*0.5 - 0.4*0.5 twice, and the earlier wins
    assert mmr_order([0.5, 0.5, 0.5], ["a b c", "a b d", "a c d"], 0.6) == [0, 1, 2]
    assert mmr_order([0.9, 0.8, 0.2], ["q", "q", "q"], 1.0) == [0, 1, 2]  # lam 1: unchanged
    assert mmr_order([], [], 0.5) == []
    assert token_similarity(frozenset(), frozenset()) == 0.0
    assert token_similarity(frozenset({"hd23", "hd", "23"}), frozenset({"hd", "40"})) == 0.25


def test_tied_scores_keep_hops_then_id_order_through_the_stage():
    # every body alike and every score equal: MMR changes nothing, so the order is the
    # first stage's tie order (hops asc, then node id asc)
    nodes = [node(n, "analyst", minute=1, output={"finding": "same words"}) for n in "dcba"]
    nodes.append(node("reviewer", "reviewer", status="running", minute=3))
    snap = snapshot(nodes, [("d", "b"), ("b", "reviewer"), ("a", "reviewer"), ("c", "reviewer")])
    spec = WalkSpec(
        weights=Weights(graph=0, temporal=0, semantic=1), diversity="mmr", mmr_lambda=0.4
    )
    assert [m.node_id for m in ranked(spec, Query(text="same"), snap)] == ["a", "b", "c", "d"]


WORDS = ["Finland", "markka", "currency", "euro", "Signmark", "Eurovision Song", "1860", "HD 23",
         "the", "country", "Italy", "lira", "Spain. The", "peseta", "money"]  # fmt: skip


@pytest.mark.parametrize("seed", range(4))
def test_both_engines_reorder_to_the_same_matches_on_random_runs(seed):
    """Exactness where the stage changes rankings: the shipped shape, a few scorers and limits."""
    rng = random.Random(seed)
    ids = [f"n{i:03d}" for i in range(120)]
    edges = {(ids[rng.randrange(max(0, j - 20), j)], ids[j]) for j in range(1, 120) for _ in "ab"}
    nodes = [
        node(i, "analyst", minute=k, output={"finding": " ".join(rng.sample(WORDS, 4))})
        for k, i in enumerate(ids)
    ]
    snap = snapshot(nodes, sorted(edges), minute=121)
    shipped = BUILTIN_PRESETS.spec("reviewer")
    blend = Blend([(BM25(), 1.0), (EmbeddingScorer(HashEmbedder()), 2.0)])
    changed = []
    for scorer, limit, lam in ((BM25(), None, 0.5), (blend, 10, MMR_LAMBDA), (BM25(), 3, 0.7)):
        query = Query(text="What currency did the country of Signmark use?", scorer=scorer)
        spec = dataclasses.replace(shipped, diversity="mmr", mmr_lambda=lam, limit=limit)
        fast = query_vectorised(snap, ids[-1], spec, query)
        slow = query_reference(snap, ids[-1], spec, query)
        rows = [(m.node_id, m.hops, m.score, m.graph, m.temporal, m.semantic) for m in fast]
        assert rows == [(m.node_id, m.hops, m.score, m.graph, m.temporal, m.semantic) for m in slow]
        off = query_vectorised(snap, ids[-1], dataclasses.replace(spec, diversity=None), query)
        changed.append([m.node_id for m in off] != [m.node_id for m in fast])
    assert any(changed)


_CHILD = """
import dataclasses, json, sys
sys.path.insert(0, sys.argv[1])
from tests.unit.test_diversity import SPEC, ranked
spec = dataclasses.replace(SPEC, diversity="mmr", mmr_lambda=0.5)
print(json.dumps([[m.node_id, m.score.hex(), m.semantic.hex()] for m in ranked(spec)]))
"""


def test_the_same_input_gives_the_same_floats_in_this_and_other_processes():
    spec = dataclasses.replace(SPEC, diversity="mmr", mmr_lambda=0.5)
    mine = [[m.node_id, m.score.hex(), m.semantic.hex()] for m in ranked(spec)]
    assert mine == [[m.node_id, m.score.hex(), m.semantic.hex()] for m in ranked(spec)]
    root = str(Path(__file__).resolve().parents[2])
    for seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, root],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert json.loads(out.stdout) == mine


def test_bad_diversity_settings_are_refused_naming_the_field_and_rule():
    for bad in (0, 0.0, -0.1, 1.5, float("nan"), float("inf"), True, "0.5"):
        with pytest.raises(InvalidArgument) as error:
            WalkSpec(diversity="mmr", mmr_lambda=bad)  # type: ignore[arg-type]
        assert error.value.field == "mmr_lambda"
        assert "0 < mmr_lambda <= 1" in error.value.rule
        with pytest.raises(InvalidArgument) as error:
            Topological(diversity="mmr", mmr_lambda=bad)  # type: ignore[arg-type]
        assert error.value.field == "mmr_lambda"
    with pytest.raises(InvalidArgument) as error:
        WalkSpec(mmr_depth=0)
    assert error.value.field == "mmr_depth"
    with pytest.raises(InvalidArgument) as error:
        WalkSpec(diversity="rerank")  # type: ignore[arg-type]
    assert error.value.field == "diversity"
    with pytest.raises(InvalidArgument) as error:
        Topological(diversity="rerank")  # type: ignore[arg-type]
    assert error.value.field == "diversity"
    with pytest.raises(InvalidArgument) as error:
        Topological(mmr_lambda=0.5)  # a weight for a stage that is not on
    assert (error.value.field, error.value.rule) == (
        "mmr_lambda",
        "is only allowed with diversity='mmr'",
    )
    assert WalkSpec(diversity="mmr", mmr_lambda=1).mmr_lambda == 1.0  # the upper end is allowed


def test_defaults_and_built_in_presets_have_no_diversity():
    assert (WalkSpec().diversity, WalkSpec().mmr_lambda, WalkSpec().mmr_depth) == (
        None,
        MMR_LAMBDA,
        MMR_DEPTH,
    )
    assert all(BUILTIN_PRESETS.spec(name).diversity is None for name in BUILTIN_PRESETS)
    assert Topological(preset="reviewer").resolve(BUILTIN_PRESETS)[0] == BUILTIN_PRESETS.spec(
        "reviewer"
    )


def test_a_stage_opts_in_with_diversity_mmr():
    spec, _ = Topological(preset="reviewer", diversity="mmr").resolve(BUILTIN_PRESETS)
    assert spec == dataclasses.replace(BUILTIN_PRESETS.spec("reviewer"), diversity="mmr")
    spec, _ = Topological(preset="reviewer", diversity="mmr", mmr_lambda=0.5).resolve(
        BUILTIN_PRESETS
    )
    assert (spec.diversity, spec.mmr_lambda) == ("mmr", 0.5)
    both = Topological(preset="reviewer", second_pass="feedback", diversity="mmr")
    spec, _ = both.resolve(BUILTIN_PRESETS)
    assert (spec.feedback > 0, spec.diversity) == (True, "mmr")


def _tool_call(strategy: Topological):
    from cortex_agents.tools import make_memory_query_tool

    presets = BUILTIN_PRESETS.with_presets(
        dataclasses.replace(BUILTIN_PRESETS["reviewer"], scorer="bm25"), replace_existing=True
    )
    handle = MemoryHandle(_snapshot(), "reviewer", presets=presets, strategy=strategy)
    return call_memory_tool(make_memory_query_tool(presets), handle, {"query_text": QUESTION})


def test_the_model_s_tool_calls_run_the_stage_s_diversity_and_record_it():
    opted = _tool_call(Topological(preset="reviewer", diversity="mmr", mmr_lambda=0.5))
    plain = _tool_call(Topological(preset="reviewer"))
    assert (opted.artifact["query"]["diversity"], opted.artifact["query"]["mmr_lambda"]) == (
        "mmr",
        0.5,
    )
    assert "diversity" not in plain.artifact["query"]  # older artifacts keep their keys
    assert "mmr_lambda" not in plain.artifact["query"]
    top = [[m["node_id"] for m in a.artifact["matches"]][:3] for a in (opted, plain)]
    assert "wolf" in top[0] and "wolf" not in top[1]


_WIRE = """
name = "div"
[kinds]
analyst = "kinds.py:run"
reviewer = "kinds.py:run"
[presets.wide]
diversity = "mmr"
mmr_lambda = {preset_lambda}
mmr_depth = 5
[[stages]]
id = "analyst-a"
kind = "analyst"
[[stages]]
id = "reviewer"
kind = "reviewer"
after = ["analyst-a"]
memory = {{ strategy = "topological", preset = "reviewer", diversity = "mmr", mmr_lambda = {lam} }}
"""


def test_a_wire_file_declares_diversity_and_refuses_a_bad_lambda(tmp_path):
    from cortex_agents.runtime import load_wire

    (tmp_path / "kinds.py").write_text("def run(ctx):\n    return {'finding': 'x'}\n")
    path = tmp_path / "wire.toml"
    path.write_text(_WIRE.format(lam="0.7", preset_lambda="0.6"))
    loaded = load_wire(path)
    assert loaded.stage("reviewer").memory == Topological(
        preset="reviewer", diversity="mmr", mmr_lambda=0.7
    )
    wide = loaded.presets.spec("wide")
    assert (wide.diversity, wide.mmr_lambda, wide.mmr_depth) == ("mmr", 0.6, 5)
    for lam, preset_lambda, where in (
        ("0.0", "0.6", "stages[1].memory.mmr_lambda"),
        ("0.7", "1.5", "presets.wide.mmr_lambda"),
    ):
        path.write_text(_WIRE.format(lam=lam, preset_lambda=preset_lambda))
        with pytest.raises(InvalidWire) as caught:
            load_wire(path)
        [problem] = caught.value.problems
        assert problem.location == where
        assert "must be a number with 0 < mmr_lambda <= 1" in problem.message


def _copies_snapshot():
    """A chain c -> d -> b -> a -> reviewer, ranked by hop decay alone (1/2, 1/3, 1/4, 1/5):
    ``b`` repeats ``a``'s finding, ``d`` and ``c`` hold new ones."""
    bodies = {"a": "alpha beta gamma", "b": "alpha beta gamma", "d": "zeta eta", "c": "delta"}
    nodes = [node(n, "analyst", minute=1, output={"finding": body}) for n, body in bodies.items()]
    nodes.append(node("reviewer", "reviewer", status="running", minute=3))
    return snapshot(nodes, [("c", "d"), ("d", "b"), ("b", "a"), ("a", "reviewer")])


def test_the_stage_never_moves_a_repeated_body_ahead_of_a_new_one():
    """With ``distinct_bodies`` (the shipped reviewer preset's), a repeat stays after every new
    body: the stage reorders the new bodies only, so lam 1 gives the first-stage order back and
    an earlier round's copy never pushes a new finding out of the top ``k``."""
    snap = _copies_snapshot()
    spec = WalkSpec(
        prior="hop_decay", weights=Weights(graph=1, temporal=0, semantic=0), distinct_bodies=True
    )
    plain = [m.node_id for m in ranked(spec, Query(), snap)]
    assert plain == ["a", "d", "c", "b"]  # b repeats a: after every new body
    for lam in (1.0, MMR_LAMBDA, 0.5):
        mmr = dataclasses.replace(spec, diversity="mmr", mmr_lambda=lam)
        # (before the fix: lam 1 gave a, b, d, c and lam 0.9 a, d, b, c: b, 0.9/3 - 0.1 * 1,
        # beat c, 0.9/5 - 0.1 * 0)
        assert [m.node_id for m in ranked(mmr, Query(), snap)] == plain
        limited = dataclasses.replace(mmr, limit=3)
        assert [m.node_id for m in ranked(limited, Query(), snap)] == ["a", "d", "c"]


def test_a_stage_that_opts_in_without_a_lambda_keeps_its_preset_s_lambda(tmp_path):
    """``Topological(diversity="mmr")`` with no ``mmr_lambda`` leaves the preset's lambda as it
    is (the built-in presets' is MMR_LAMBDA), as ``scorer=None`` and ``limit=None`` do."""
    from cortex_agents.runtime import load_wire

    own = dataclasses.replace(
        BUILTIN_PRESETS["reviewer"],
        name="wide",
        spec=dataclasses.replace(BUILTIN_PRESETS.spec("reviewer"), diversity="mmr", mmr_lambda=0.6),
    )
    presets = BUILTIN_PRESETS.with_presets(own)
    spec, _ = Topological(preset="wide", diversity="mmr").resolve(presets)
    assert (spec.diversity, spec.mmr_lambda) == ("mmr", 0.6)
    spec, _ = Topological(preset="wide", diversity="mmr", mmr_lambda=0.7).resolve(presets)
    assert spec.mmr_lambda == 0.7  # the stage's own lambda wins
    spec, _ = Topological(preset="reviewer", diversity="mmr").resolve(presets)
    assert spec.mmr_lambda == MMR_LAMBDA
    # the same through a wire file, and in the artifact of a tool call naming the preset
    (tmp_path / "kinds.py").write_text("def run(ctx):\n    return {'finding': 'x'}\n")
    path = tmp_path / "wire.toml"
    wire = _WIRE.format(lam="0.7", preset_lambda="0.6").replace(
        'preset = "reviewer", diversity = "mmr", mmr_lambda = 0.7',
        'preset = "wide", diversity = "mmr"',
    )
    path.write_text(wire)
    loaded = load_wire(path)
    spec, _ = loaded.stage("reviewer").memory.resolve(loaded.presets)
    assert (spec.mmr_lambda, spec.mmr_depth) == (0.6, 5)
    from cortex_agents.tools import make_memory_query_tool

    handle = MemoryHandle(
        _snapshot(),
        "reviewer",
        presets=presets,
        strategy=Topological(preset="wide", diversity="mmr"),
    )
    call = call_memory_tool(make_memory_query_tool(presets), handle, {"query_text": QUESTION})
    assert call.artifact["query"]["mmr_lambda"] == 0.6


SENTENCES = ["Finland used the markka", "the markka became the euro", "Signmark sang at Eurovision",
             "Italy used the lira", "HD 23 is a star", ""]  # fmt: skip


@pytest.mark.parametrize("seed", range(6))
def test_lambda_one_gives_the_first_stage_order_back_and_repeats_stay_after(seed):
    """On runs where many bodies repeat (the shipped reviewer preset keeps each body once):
    ``mmr_lambda=1`` changes nothing, no lambda moves a repeat ahead of a new body, and the
    engines agree, with and without a limit."""
    rng = random.Random(seed)
    ids = [f"n{i:02d}" for i in range(30)]
    edges = {(ids[rng.randrange(max(0, j - 6), j)], ids[j]) for j in range(1, 30) for _ in "ab"}
    nodes = [
        node(i, "analyst", minute=k, output={"finding": rng.choice(SENTENCES)})
        for k, i in enumerate(ids)
    ]
    nodes.append(node("reviewer", "reviewer", status="running", minute=30))
    edges |= {(i, "reviewer") for i in ids[-4:]}
    snap = snapshot(nodes, sorted(edges), minute=31)
    query = Query(text="What currency did Finland use before the euro?", scorer=BM25())
    for limit in (None, 3, 10):
        shipped = dataclasses.replace(BUILTIN_PRESETS.spec("reviewer"), limit=limit)
        off = [m.node_id for m in ranked(shipped, query, snap)]
        one = dataclasses.replace(shipped, diversity="mmr", mmr_lambda=1.0)
        assert [m.node_id for m in ranked(one, query, snap)] == off
        for lam in (MMR_LAMBDA, 0.5):
            found = ranked(dataclasses.replace(one, mmr_lambda=lam), query, snap)
            seen: set[str] = set()
            repeats = []
            for m in found:
                repeats.append(bool(m.body_text) and m.body_text in seen)
                seen.add(m.body_text)
            assert repeats == sorted(repeats)  # every repeat after every new body


def test_a_wire_file_refuses_diversity_keys_on_a_classic_stage(tmp_path):
    """A classic stage (the default strategy) reads none of the topological keys: a wire file
    that gives it ``diversity`` or ``mmr_lambda`` (even an out-of-range one) is refused,
    naming each key, rather than run without the stage it asked for."""
    from cortex_agents.runtime import load_wire

    (tmp_path / "kinds.py").write_text("def run(ctx):\n    return {'finding': 'x'}\n")
    path = tmp_path / "wire.toml"
    path.write_text(
        'name = "div"\n[kinds]\nanalyst = "kinds.py:run"\n[[stages]]\nid = "a"\n'
        'kind = "analyst"\nmemory = { diversity = "mmr", mmr_lambda = 7 }\n'
    )
    with pytest.raises(InvalidWire) as caught:
        load_wire(path)
    assert [p.location for p in caught.value.problems] == [
        "stages[0].memory.diversity",
        "stages[0].memory.mmr_lambda",
    ]
    assert all("strategy = 'topological'" in p.message for p in caught.value.problems)
