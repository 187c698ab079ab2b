"""A run under the saver: the store's cache of the committed log holds the run's compressed chunks."""

from __future__ import annotations

from cortex_agents.persistence import Cursor
from cortex_agents.substrate._packed import CHUNK
from tests.support.graphs import chain_graph, expected_log


def chunks(log) -> list[object]:
    events = log.branch.events
    return events._parts[0][: events._parts[1]]


def test_the_committed_log_shares_the_runs_chunks_and_reads_the_same(open_db):
    config = {"configurable": {"thread_id": "t1"}}
    with open_db() as saver:
        # each step committed before the next (the runtime's way): under "async" a commit may
        # come after the run sealed its events, and the cache then seals its own chunks
        app = chain_graph().compile(checkpointer=saver)
        out = app.invoke({"goal": 120}, config, durability="sync")
        run = out["substrate"]
        latest = saver.inner.get_tuple(config)
        cursor = Cursor.decode(latest.checkpoint["channel_values"]["substrate"])
        committed = saver.store.read("t1", "", cursor)
        assert committed.branch is not run.branch and len(committed) == len(run)
        ours, theirs = chunks(committed), chunks(run)
        assert len(ours) == len(theirs) >= len(run) // CHUNK - 2 >= 3
        assert all(a is b for a, b in zip(ours, theirs, strict=True))  # one copy of each
        assert committed == run == expected_log(120) and committed.digest == run.digest
