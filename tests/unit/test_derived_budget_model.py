"""DerivedBudget against a plain reference LRU: the map, each kind's order and the weights agree.

A randomized model test (review of the derived-budget merge): every get,
peek, put, put-replace and evict is applied to both, and after each one
the budget's keys per kind, values, sizes and length must match the
reference's (a kind's order holding a key the map dropped, or the reverse,
shows up as a mismatch).
"""

from __future__ import annotations

import random

import pytest

from cortex_agents.substrate._budget import DerivedBudget

KINDS = ("state", "derived", "forms", "free")  # "free": no per-kind limit


class ReferenceLRU:
    """What the budget promises, written the slow, obvious way: one list, oldest first."""

    def __init__(self, capacity: int, limits: dict[str, int]) -> None:
        self.capacity, self.limits = capacity, limits
        self.entries: list[tuple[str, int, object, int]] = []  # kind, key, value, weight

    def _find(self, kind: str, key: int) -> int | None:
        return next((i for i, e in enumerate(self.entries) if e[0] == kind and e[1] == key), None)

    def get(self, kind: str, key: int) -> object | None:
        i = self._find(kind, key)
        if i is None:
            return None
        self.entries.append(self.entries.pop(i))
        return self.entries[-1][2]

    def peek(self, kind: str, key: int) -> object | None:
        i = self._find(kind, key)
        return None if i is None else self.entries[i][2]

    def put(self, kind: str, key: int, value: object, weight: int) -> object:
        i = self._find(kind, key)
        if i is not None:
            self.entries.append(self.entries.pop(i))
            return self.entries[-1][2]
        if weight > self.capacity:
            return value
        self.entries.append((kind, key, value, weight))
        mine = [e for e in self.entries if e[0] == kind]
        if kind in self.limits and len(mine) > self.limits[kind]:
            self.entries.remove(mine[0])
        while sum(e[3] for e in self.entries) > self.capacity:
            self.entries.pop(0)
        return value

    def evict(self, kind: str) -> int:
        before = len(self.entries)
        self.entries = [e for e in self.entries if e[0] != kind]
        return before - len(self.entries)

    def keys(self, kind: str) -> tuple[int, ...]:
        return tuple(e[1] for e in self.entries if e[0] == kind)

    def sizes(self) -> dict[str, int]:
        sizes = dict.fromkeys(self.limits, 0)
        for kind, _, _, weight in self.entries:
            sizes[kind] = sizes.get(kind, 0) + weight
        return sizes


def assert_same(budget: DerivedBudget, model: ReferenceLRU) -> None:
    for kind in KINDS:
        assert budget.keys(kind) == model.keys(kind), kind
        assert budget.items(kind) == tuple((e[1], e[2]) for e in model.entries if e[0] == kind), (
            kind
        )
    assert budget.sizes() == model.sizes()
    assert len(budget) == len(model.entries)
    assert sum(budget.sizes().values()) <= budget.capacity


@pytest.mark.parametrize("seed", range(12))
def test_the_budget_agrees_with_a_reference_lru_under_random_operations(seed):
    rng = random.Random(seed)
    capacity = rng.randint(1, 12)
    limits = {kind: rng.randint(1, 5) for kind in KINDS[:3] if rng.random() < 0.8}
    budget, model = DerivedBudget(capacity, limits=limits), ReferenceLRU(capacity, limits)
    for step in range(600):
        kind, key = rng.choice(KINDS), rng.randint(0, 6)
        op = rng.random()
        if op < 0.25:
            assert budget.get(kind, key) == model.get(kind, key)
        elif op < 0.35:
            assert budget.peek(kind, key) == model.peek(kind, key)
        elif op < 0.95:
            weight = rng.choice((1, 1, 1, 2, 3, capacity, capacity + 1))
            value = (kind, key, step)
            assert budget.put(kind, key, value, weight) == model.put(kind, key, value, weight)
        else:
            assert budget.evict(kind) == model.evict(kind)
        assert_same(budget, model)
