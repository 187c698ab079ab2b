"""Folding is linear in a node's degree: a 100k fan-in or fan-out costs 10x a 10k one, not 100x.

Work is counted, not timed. Two counts, because a quadratic fold can hide
from either one alone:

* **operations on node ids** (hashes and comparisons, through a ``str``
  subclass that counts them): a link looked up by scanning a node's links
  (``target in links``) costs O(degree) comparisons per edge;
* **bytes kept by every version** (``tracemalloc``), folding one edge per
  batch and keeping each state, as a checkpoint history does: links rebuilt
  per edge (``(*links, target)``) make version *k* hold *k* links of its own,
  O(degree²) in all, where shared links cost O(1) more per version.

Plus :class:`~cortex_agents.substrate._adjacency.Links` alone, and the fold's
properties with every node's links held in one (``SMALL = 0``).
"""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_agents.substrate import (
    EMPTY_STATE,
    EdgeAdded,
    EdgeRemoved,
    Event,
    NodeScheduled,
    StageStarted,
    fold,
)
from cortex_agents.substrate import _adjacency as adjacency
from cortex_agents.substrate._adjacency import Links, appended
from tests.support.helpers import at
from tests.support.substrate import random_run


class Counted(str):
    """A node id that counts every hash and comparison made of it (in ``Counted.ops``)."""

    __slots__ = ()
    ops = 0

    def __hash__(self) -> int:
        Counted.ops += 1
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        Counted.ops += 1
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        Counted.ops += 1
        return str.__ne__(self, other)


def star(degree: int, shape: str, ids: type[str] = str) -> list[Event]:
    """A hub and ``degree`` leaves, every edge into the hub (``in``) or out of it (``out``)."""
    hub = ids("hub")
    leaves = [ids(f"leaf-{i}") for i in range(degree)]
    events: list[Event] = [NodeScheduled(node_id=n, kind="k", at=at(0)) for n in (hub, *leaves)]
    events += [
        EdgeAdded(source=leaf, target=hub, at=at(0))
        if shape == "in"
        else EdgeAdded(source=hub, target=leaf, at=at(0))
        for leaf in leaves
    ]
    return events


def operations(degree: int, shape: str) -> int:
    events = star(degree, shape, Counted)
    Counted.ops = 0
    state = fold(events)
    count = Counted.ops
    links = state.predecessors("hub") if shape == "in" else state.successors("hub")
    assert len(links) == degree  # every edge is in
    return count


@pytest.mark.parametrize("shape", ["in", "out"])
def test_folding_a_100k_star_takes_ten_times_the_operations_of_a_10k_one(shape):
    small, large = operations(10_000, shape), operations(100_000, shape)
    assert large / small <= 12  # linear: 10 (a quadratic fold: ~100)
    assert large / 100_000 <= 40  # and a small constant per node and edge


@contextmanager
def traced() -> Iterator[list[int]]:
    tracemalloc.start()
    out: list[int] = []
    try:
        yield out
        out.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()


def kept_by_versions(degree: int, shape: str) -> int:
    """Bytes every state of a star folded one edge per batch keeps (all states kept)."""
    events = star(degree, shape)
    base = fold(events[: degree + 1])
    with traced() as size:
        versions: list[Any] = [base]
        for event in events[degree + 1 :]:
            versions.append(fold([event], versions[-1]))
    return size[0]


@pytest.mark.parametrize("shape", ["in", "out"])
def test_each_version_of_a_growing_hub_costs_constant_bytes(shape):
    small, large = kept_by_versions(500, shape), kept_by_versions(4_000, shape)
    assert large / small <= 12  # linear: 8 (links copied per edge: ~64)


def test_links_versions_share_a_buffer_and_see_only_their_prefix():
    first = Links(["a", "b"])
    second = first.appended("c")
    third = second.appended("d")
    assert (list(first), list(second), list(third)) == (["a", "b"], ["a", "b", "c"], list("abcd"))
    assert "c" not in first and "c" in second and "d" not in second and "d" in third
    assert second._items is third._items  # appended in place
    again = second.appended("d")  # the very node a longer version appended: shared
    assert again._items is third._items and again == third
    other = second.appended("x")  # another path from an older version: its own copy
    assert other._items is not third._items
    assert list(other) == ["a", "b", "c", "x"] and list(third) == list("abcd")
    assert "x" not in third and "d" not in other
    plain = ("a", "b", "c")
    assert second == plain and plain.__eq__(second) is NotImplemented  # tuple defers to Links
    assert plain == second
    assert second[-1] == "c" and second[1:] == ("b", "c")
    with pytest.raises(IndexError):
        second[3]


def test_small_links_are_tuples_and_grow_into_links():
    links: Any = None
    for i in range(adjacency.SMALL + 2):
        links = appended(links, f"n{i}")
        assert isinstance(links, tuple) == (i < adjacency.SMALL)
    assert list(links) == [f"n{i}" for i in range(adjacency.SMALL + 2)]


def test_removing_every_edge_of_a_hub_in_one_batch_keeps_the_others_in_order():
    events = star(50, "out")
    base = fold(events)
    removals = [EdgeRemoved(source="hub", target=f"leaf-{i}", at=at(1)) for i in range(0, 50, 2)]
    state = fold([*removals, EdgeAdded(source="hub", target="leaf-0", at=at(1))], base)
    assert list(state.successors("hub")) == [*(f"leaf-{i}" for i in range(1, 50, 2)), "leaf-0"]
    assert "leaf-2" not in state.successors("hub") and "leaf-3" in state.successors("hub")
    assert [(e.source, e.target) for e in state.edges][-1] == ("hub", "leaf-0")
    assert list(base.successors("hub")) == [f"leaf-{i}" for i in range(50)]  # untouched


def test_a_rejected_batch_leaves_a_hubs_links_as_they_were():
    base = fold(star(20, "in"))
    with pytest.raises(Exception, match="already exists"):
        fold(
            [
                NodeScheduled(node_id="late", kind="k", at=at(1)),
                EdgeAdded(source="late", target="hub", at=at(1)),
                EdgeAdded(source="leaf-3", target="hub", at=at(1)),
            ],
            base,
        )
    assert "late" not in base.predecessors("hub") and len(base.predecessors("hub")) == 20
    later = fold(
        [
            NodeScheduled(node_id="other", kind="k", at=at(1)),
            EdgeAdded(source="other", target="hub", at=at(1)),
        ],
        base,
    )
    assert list(later.predecessors("hub"))[-1] == "other" and "late" not in later.predecessors(
        "hub"
    )
    assert fold([StageStarted(node_id="hub", at=at(2))], later).node("hub").status == "running"


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 120), st.lists(st.integers(1, 8), max_size=30))
def test_the_fold_properties_hold_with_every_nodes_links_in_a_links(seed, length, cuts):
    previous = adjacency.SMALL
    adjacency.SMALL = 0  # every node's links in a Links, removals through the draft's dicts
    try:
        events = random_run(random.Random(seed), length)
        whole = fold(events)
        batched, position = EMPTY_STATE, 0
        for size in [*cuts, len(events)]:
            batched = fold(events[position : position + size], batched)
            position += size
            edges = sorted((e.source, e.target) for e in batched.edges)
            succs = sorted((u, v) for u in batched.nodes for v in batched.successors(u))
            preds = sorted((u, v) for v in batched.nodes for u in batched.predecessors(v))
            assert edges == succs == preds
        assert batched == whole
    finally:
        adjacency.SMALL = previous
