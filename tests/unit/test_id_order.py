"""Order-preserving labels of node ids (`memory/idorder.py`), forks included.

The labels must order ids as code points do, whatever the order of arrival,
and a fork at any count must behave as an order built from its ids alone.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from cortex_agents.errors import InvalidArgument
from cortex_agents.memory._idorder import IdOrder


def random_ids(rng: random.Random, count: int) -> list[str]:
    ids: set[str] = set()
    while len(ids) < count:
        ids.add("".join(rng.choice("abcz09-#") for _ in range(rng.randint(1, 4))))
    out = sorted(ids)
    rng.shuffle(out)
    return out


def built(ids: list[str]) -> IdOrder:
    order = IdOrder()
    for node_id in ids:
        order.add(node_id)
    return order


def assert_orders_like_code_points(order: IdOrder, ids: list[str]) -> None:
    labels = order.labels[: len(ids)]
    assert len(order) == len(ids)
    assert [ids[i] for i in np.argsort(labels, kind="stable")] == sorted(ids)


@pytest.mark.parametrize("seed", range(6))
def test_a_fork_at_any_count_goes_on_like_an_order_built_from_its_ids(seed):
    rng = random.Random(seed)
    ids = random_ids(rng, 300)
    whole = built(ids[:200])
    assert_orders_like_code_points(whole, ids[:200])
    for count in [0, 1, 50, 150, 190, 196, 199, 200]:  # far back, and near the end
        fork = whole.fork(count, ids[count:200])
        for node_id in ids[200:]:  # the fork goes on with other ids
            fork.add(node_id)
        mine = [*ids[:count], *ids[200:]]
        assert_orders_like_code_points(fork, mine)
        assert_orders_like_code_points(whole, ids[:200])  # the parent is untouched
    assert len(whole) == 200


def test_a_fork_told_the_wrong_later_ids_is_refused():
    order = built(["b", "a", "c"])
    with pytest.raises(InvalidArgument, match="later"):
        order.fork(1, ["c"])  # two ids came after the first one
