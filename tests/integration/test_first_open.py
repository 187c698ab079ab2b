"""Several processes opening one fresh database at once: all finish, the schema is set up once.

Defect D1 (issue 14): on Postgres the first open held the setup advisory lock
inside a transaction while LangGraph's ``setup()`` ran ``CREATE INDEX
CONCURRENTLY`` on another connection; that index build waits for every open
transaction, including the other openers' waiting on the lock: a deadlock
that never ends.
"""

from __future__ import annotations

import multiprocessing

import pytest

from cortex_agents.persistence import aopen_saver, open_saver
from tests.support.graphs import chain_graph

OPENERS = 4


def open_and_write(database: str, thread: str, is_async: bool) -> None:
    """Open the database (set it up if fresh) and write a short run on a thread of its own."""
    if is_async:
        import asyncio

        async def go() -> None:
            async with aopen_saver(database) as saver:
                app = chain_graph().compile(checkpointer=saver)
                await app.ainvoke({"goal": 2}, {"configurable": {"thread_id": thread}})

        asyncio.run(go())
        return
    with open_saver(database) as saver:
        app = chain_graph().compile(checkpointer=saver)
        app.invoke({"goal": 2}, {"configurable": {"thread_id": thread}})


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_processes_opening_a_fresh_database_at_once_all_finish(durable_database, is_async):
    spawn = multiprocessing.get_context("spawn")
    openers = [
        spawn.Process(target=open_and_write, args=(durable_database, f"t{i}", is_async))
        for i in range(OPENERS)
    ]
    for opener in openers:
        opener.start()
    try:
        for opener in openers:
            opener.join(90)
        hung = [o.pid for o in openers if o.exitcode is None]
        assert not hung, f"{len(hung)} of {OPENERS} openers still blocked after 90 s"
        assert [o.exitcode for o in openers] == [0] * OPENERS
    finally:
        for opener in openers:
            if opener.exitcode is None:
                opener.kill()
                opener.join(10)
    with open_saver(durable_database) as saver:
        assert saver.store.threads() == [f"t{i}" for i in range(OPENERS)]
        for i in range(OPENERS):
            log = saver.substrate({"configurable": {"thread_id": f"t{i}"}})
            assert len(log) == 7  # 2 steps: 4 + 3 events
