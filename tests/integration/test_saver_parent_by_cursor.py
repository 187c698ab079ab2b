"""A put whose parent the saver knows only by cursor (no chain hash remembered).

Review of the derived-budget merge: the saver keeps ``(Cursor, hash)`` per
checkpoint, and ``None`` for the hash of a checkpoint it only read. Then the
parent's log is read back through the store: these runs go through that path
(fresh savers over one database, async durability, a time-travel fork and a
copied thread) and must store exactly the new events, on the right branch.
"""

from __future__ import annotations

from cortex_agents.persistence import open_saver
from tests.support.graphs import chain_graph, expected_log


def config(thread: str, **extra) -> dict:
    return {"configurable": {"thread_id": thread, **extra}}


def size(steps: int) -> int:
    return len(expected_log(steps))


def test_fresh_savers_fork_and_copy_read_parents_back_by_cursor(durable_database):
    with open_saver(durable_database) as saver:
        chain_graph().compile(checkpointer=saver).invoke(
            {"goal": 6}, config("t1"), durability="async"
        )
        assert saver.store.counts()["events"] == size(6)
    with open_saver(durable_database) as saver:  # nothing remembered: parents read by cursor
        app = chain_graph().compile(checkpointer=saver)
        at_three = next(
            s for s in app.get_state_history(config("t1")) if s.values.get("steps") == 3
        )
        assert saver.cache_sizes()["cursors"] > 0  # remembered by cursor only, from the reads
        forked = app.invoke({"goal": 8, "label": "fork"}, at_three.config, durability="async")
        labels = dict.fromkeys(range(3, 10), "fork")  # the label stays in the state
        assert forked["substrate"] == expected_log(8, labels)
        assert saver.store.counts()["events"] == size(6) + size(8) - size(3)  # the fork's only
    with open_saver(durable_database) as saver:
        app = chain_graph().compile(checkpointer=saver)
        assert app.get_state(config("t1")).values["substrate"] == expected_log(8, labels)
        saver.copy_thread("t1", "t2")
        copied = saver.store.counts()["events"]
    with open_saver(durable_database) as saver:
        app = chain_graph().compile(checkpointer=saver)
        more = app.invoke({"goal": 10}, config("t2"), durability="async")
        assert more["substrate"] == expected_log(10, labels)
        # spliced onto the copy: only the new events stored
        assert saver.store.counts()["events"] == copied + size(10) - size(8)
        # the source thread is untouched, and goes on from its own head
        again = app.invoke({"goal": 9}, config("t1"), durability="sync")
        assert again["substrate"] == expected_log(9, labels)
        assert saver.store.counts()["events"] == copied + size(10) - size(8) + size(9) - size(8)
