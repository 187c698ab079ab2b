"""tools/multihop_ceiling.py: a perfect reader's queries and the round robin that fills the top 3."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from cortex_agents.errors import InvalidArgument

TOOL = Path(__file__).parents[2] / "tools" / "multihop_ceiling.py"


@pytest.fixture(scope="module")
def ceiling() -> ModuleType:
    spec = importlib.util.spec_from_file_location("multihop_ceiling", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_hop_reference_becomes_that_steps_answer(ceiling: ModuleType) -> None:
    answers = ["Judith Viorst", "Rutgers University", "land-grant university"]
    assert ceiling.fill_hops("#2 >> instance of", answers) == "Rutgers University >> instance of"
    assert ceiling.fill_hops("Who was the first president of #1 ?", answers) == (
        "Who was the first president of Judith Viorst ?"
    )
    # two references, and #1 is not a prefix match of #12
    many = [f"a{i}" for i in range(1, 13)]
    assert ceiling.fill_hops("#12 and #1", many) == "a12 and a1"


def test_without_a_reader_the_references_are_left_out(ceiling: ModuleType) -> None:
    assert ceiling.fill_hops("what is the name of the waterfall in #1", None) == (
        "what is the name of the waterfall in"
    )
    assert ceiling.fill_hops("#1 >> educated at", None) == ">> educated at"


def test_a_reference_to_no_step_is_refused(ceiling: ModuleType) -> None:
    with pytest.raises(InvalidArgument, match="question_decomposition"):
        ceiling.fill_hops("the capital of #3", ["France", "Paris"])
    with pytest.raises(InvalidArgument):
        ceiling.fill_hops("#0 >> country", ["France"])


def test_round_robin_takes_each_rankings_best_in_turn_without_repeats(
    ceiling: ModuleType,
) -> None:
    assert ceiling.round_robin([["a", "b", "c"], ["d", "e"]]) == ["a", "d", "b"]
    # a node already taken is skipped, the turn passes on
    assert ceiling.round_robin([["a", "b", "c"], ["a", "e", "f"]]) == ["a", "b", "e"]
    # one step per slot when there are as many steps as slots
    assert ceiling.round_robin([["a"], ["b"], ["c"], ["d"]]) == ["a", "b", "c"]
    # short rankings give what they have
    assert ceiling.round_robin([["a"], ["a"]]) == ["a"]
    assert ceiling.round_robin([["x", "y", "z", "w"]]) == ["x", "y", "z"]


def test_content_words_drop_stopwords_and_keep_identifiers(ceiling: ModuleType) -> None:
    words = ceiling.content_words("When was the Heinkel HD 23 first flown, in 2011–12?")
    assert {"heinkel", "hd23", "flown", "2011-12", "first"} <= words
    assert not words & {"when", "was", "the", "in"}
