"""What a graph-bound call links after by default, kept per branch (`tools/_latest_work.py`).

Compared with one pass over the nodes and edges of a from-scratch state
after every batch of random runs (edges into completed work, removals,
retirements, rewrites, failures), on forks of older views, and at older
prefixes of each branch, mid-batch included.
"""

from __future__ import annotations

import random

import pytest

from cortex_agents.substrate import (
    EdgeAdded,
    GraphState,
    NodeScheduled,
    StageCompleted,
    StageStarted,
    SubstrateLog,
)
from cortex_agents.tools._latest_work import latest_work
from tests.support.helpers import at
from tests.support.substrate import KINDS, random_run


def scan(state: GraphState, agent_kind: str) -> tuple[str, ...]:
    """The reference: completed work of other kinds that no completed other-kind work follows."""
    work = {
        node_id
        for node_id, node in state.nodes.items()
        if node.status == "completed" and node.kind != agent_kind
    }
    covered = {e.source for e in state.edges if e.source in work and e.target in work}
    return tuple(n for n in state.nodes if n in work and n not in covered)


@pytest.mark.parametrize("seed", range(8))
def test_it_equals_a_scan_after_every_batch_on_forks_and_at_older_prefixes(seed):
    rng = random.Random(seed)
    log = SubstrateLog()
    for _ in range(80):
        if len(log) and rng.random() < 0.2:  # go on from an older view: a fork
            log = log.prefix(rng.randint(0, len(log)))
        log = log.appended(random_run(rng, rng.randint(1, 6), log.state))
        for kind in ("reviewer", rng.choice(KINDS)):
            assert latest_work(log, kind) == scan(log.state, kind)
            for cut in rng.sample(range(len(log) + 1), min(3, len(log) + 1)):
                older = log.prefix(cut)
                assert latest_work(older, kind) == scan(older.state, kind), (kind, cut)


def test_work_completed_in_one_batch_with_its_edge_is_covered_from_the_edge_on():
    def run(node_id: str, kind: str, t: int):
        return [
            NodeScheduled(node_id=node_id, kind=kind, at=at(t)),
            StageStarted(node_id=node_id, at=at(t)),
            StageCompleted(node_id=node_id, at=at(t), output={"text": node_id}),
        ]

    events = [*run("a", "analyst", 0), *run("b", "merge", 1)]
    events.append(EdgeAdded(source="a", target="b", at=at(2)))  # after both completed
    log = SubstrateLog().appended(events)  # one batch
    assert latest_work(log, "reviewer") == ("b",)
    assert latest_work(log.prefix(len(events) - 1), "reviewer") == ("a", "b")
    assert latest_work(log, "analyst") == ("b",)  # the agent's own kind is not work
