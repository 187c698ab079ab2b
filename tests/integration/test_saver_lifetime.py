"""One way to open a saver for each lifetime; the context manager is never mistaken for the saver.

``open_saver(db)`` and ``aopen_saver(db)`` are context managers. Handing one to
LangGraph as the checkpointer (``checkpointer=open_saver(db)``) fails on the
graph's first step, before any node runs, naming the ``with`` line to write;
it opens nothing, so no connection leaks and no file is created.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from cortex_agents import aopen_saver, open_saver
from cortex_agents.errors import InvalidArgument
from cortex_agents.persistence import CortexSaver, SaverContext
from cortex_agents.runtime import Runtime, WireBuilder
from tests.support.graphs import chain_graph

CONFIG = {"configurable": {"thread_id": "t"}}


def test_the_context_manager_as_checkpointer_fails_on_the_first_step_naming_the_with_line(
    tmp_path,
):
    db = tmp_path / "x.db"
    app = chain_graph().compile(checkpointer=open_saver(db))
    with pytest.raises(InvalidArgument) as caught:
        app.invoke({"goal": 2}, CONFIG)
    assert caught.value.field == "checkpointer"
    assert f"with open_saver({str(db)!r}) as saver:" in str(caught.value)
    assert "checkpointer=saver" in str(caught.value)
    assert not db.exists()  # nothing was opened


def test_the_async_context_manager_names_async_with(tmp_path):
    db = tmp_path / "y.db"
    app = chain_graph().compile(checkpointer=aopen_saver(db))
    with pytest.raises(InvalidArgument, match=r"`async with aopen_saver\(.*\) as saver:`"):
        asyncio.run(app.ainvoke({"goal": 2}, CONFIG))
    assert not db.exists()


def test_a_runtime_given_the_context_manager_is_refused_when_built(tmp_path):
    wire = WireBuilder("w").kind("one", lambda ctx: {"ok": True}).stage("only", "one").build()
    with pytest.raises(InvalidArgument, match=r"with open_saver\(.*\) as saver:"):
        Runtime(wire, saver=open_saver(tmp_path / "z.db"))


def test_the_with_block_yields_a_saver_that_runs_the_graph_and_is_closed_after(tmp_path):
    db = tmp_path / "w.db"
    opening = open_saver(db)
    assert isinstance(opening, SaverContext)
    with opening as saver:
        assert isinstance(saver, CortexSaver)
        out = chain_graph().compile(checkpointer=saver).invoke({"goal": 2}, CONFIG)
        with pytest.raises(InvalidArgument, match="already open"):
            opening.__enter__()
    assert out["steps"] == 2
    with open_saver(db) as again:  # the first block committed and closed; a new one reads it
        assert again.store.threads() == ["t"]
    with contextlib.ExitStack() as stack:  # an ordinary context manager for ExitStack too
        assert isinstance(stack.enter_context(open_saver(db)), CortexSaver)


def test_the_async_with_block_yields_a_saver(tmp_path):
    async def go() -> dict:
        async with aopen_saver(tmp_path / "v.db") as saver:
            return await chain_graph().compile(checkpointer=saver).ainvoke({"goal": 3}, CONFIG)

    assert asyncio.run(go())["steps"] == 3
