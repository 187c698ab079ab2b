"""Validation of walk specs and queries; presets; strategies."""

import pytest

from cortex_agents.errors import InvalidArgument, UnknownPreset
from cortex_agents.memory import (
    BUILTIN_PRESETS,
    DEFAULT_SCORER,
    Classic,
    Preset,
    Query,
    Topological,
    WalkSpec,
    Weights,
    declared_preset,
)
from cortex_agents.memory._presets import EVIDENCE_ONLY


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"direction": "sideways"}, "direction"),
        ({"scope": "all"}, "scope"),
        ({"prior": "pagerank"}, "prior"),
        ({"max_distance": 0}, "max_distance"),
        ({"max_distance": 1.5}, "max_distance"),
        ({"limit": 0}, "limit"),
        ({"limit": True}, "limit"),
        ({"alpha": 1.5}, "alpha"),
        ({"alpha": float("nan")}, "alpha"),
        ({"time_scale": 0}, "time_scale"),
        ({"time_scale": float("inf")}, "time_scale"),
        ({"past_boundary": ""}, "past_boundary"),
    ],
)
def test_walk_spec_rejects_with_the_field_named(kwargs, field):
    with pytest.raises(InvalidArgument) as caught:
        WalkSpec(**kwargs)
    assert caught.value.field == field
    assert f"`{field}`" in str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"graph": -1}, "weights.graph"),
        ({"semantic": float("nan")}, "weights.semantic"),
        ({"temporal": "1"}, "weights.temporal"),
        ({"graph": 0, "temporal": 0, "semantic": 0}, "weights"),
    ],
)
def test_weights_rejects_with_the_field_named(kwargs, field):
    with pytest.raises(InvalidArgument) as caught:
        Weights(**kwargs)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"routing_key": 3}, "routing_key"),
        ({"text": ["a"]}, "text"),
        ({"kinds": "analyst"}, "kinds"),
        ({"kinds": [1]}, "kinds"),
        ({"scorer": "jaccard"}, "scorer"),
    ],
)
def test_query_rejects_with_the_field_named(kwargs, field):
    with pytest.raises(InvalidArgument) as caught:
        Query(**kwargs)
    assert caught.value.field == field


def test_builtin_presets_carry_the_harness_chosen_defaults():
    # tools/eval_retrieval.py picked these on the dev split (README: held-out figures).
    expected = {
        "default": ("ancestors", (0.25, 0.25, 1), frozenset()),
        "analyst": ("ancestors", (0.25, 0.25, 1), frozenset()),
        "reviewer": ("ancestors", (0.25, 0.25, 1), EVIDENCE_ONLY),
        "planner": ("bidirectional", (0.25, 0.5, 1), frozenset()),
    }
    assert set(BUILTIN_PRESETS) == set(expected)
    for name, (direction, weights, excluded) in expected.items():
        preset = BUILTIN_PRESETS.resolve(name)
        spec = preset.spec
        assert spec.direction == direction
        assert (spec.weights.graph, spec.weights.temporal, spec.weights.semantic) == weights
        assert spec.time_scale == 3600.0 and spec.prior == "hop_decay"
        assert spec.time_reference == "newest"
        assert (spec.support, spec.named_evidence, spec.bridge) == (0.6, 0.2, 0.15)
        assert spec.distinct_bodies is True
        assert preset.scorer == DEFAULT_SCORER == "wordllama+bm25"
        assert preset.exclude_kinds == excluded and preset.kinds is None
        assert (
            10 <= spec.limit <= 20
        )  # an agent rarely reads more; the tool never materialises more
    assert {"planner", "merge", "reviewer", "rewriter"} == EVIDENCE_ONLY


def test_registry_is_open_without_mutating_the_builtins():
    auditor = Preset(name="auditor", spec=WalkSpec(direction="descendants", limit=3))
    registry = BUILTIN_PRESETS.with_presets(auditor)
    assert registry.spec("auditor").limit == 3
    assert "auditor" not in BUILTIN_PRESETS
    with pytest.raises(InvalidArgument, match="already exists"):
        registry.with_presets(auditor)
    replaced = registry.with_presets(Preset(name="auditor", spec=WalkSpec()), replace_existing=True)
    assert replaced.spec("auditor").limit is None


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(UnknownPreset) as caught:
        BUILTIN_PRESETS.resolve("revewer")
    assert caught.value.known == ("analyst", "default", "planner", "reviewer")
    assert "'revewer'" in str(caught.value)


def test_preset_spec_overrides_are_validated():
    assert BUILTIN_PRESETS.spec("reviewer", limit=2).limit == 2
    with pytest.raises(InvalidArgument):
        BUILTIN_PRESETS.spec("reviewer", limit=-2)


def test_topological_strategy_resolves_structural_arguments():
    strategy = Topological(
        preset="reviewer",
        limit=4,
        past_boundary="merge",
        upstream_of_kind="analyst",
        routing_key="c1",
    )
    spec, query = strategy.resolve(text="supplier audits")
    assert spec.prior == "hop_decay" and spec.limit == 4 and spec.past_boundary == "merge"
    assert query.kinds == frozenset({"analyst"}) and query.routing_key == "c1"
    assert query.text == "supplier audits" and query.exclude_kinds == EVIDENCE_ONLY
    assert query.scorer is BUILTIN_PRESETS.scorer("reviewer")
    with pytest.raises(UnknownPreset):
        Topological(preset="nope").resolve()
    with pytest.raises(InvalidArgument):
        Topological(limit=0)


def test_declared_preset_is_default_for_classic():
    assert declared_preset(Classic()) == "default"
    assert declared_preset(Topological(preset="reviewer")) == "reviewer"
