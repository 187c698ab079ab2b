"""``CortexSaver.wrap`` over every saver LangGraph ships, and what a plain saver does.

Each saver is opened as a LangGraph user opens it (their connection, their
pool), wrapped in one line, and runs a graph of ``stage_node`` stages and a
wire ``Runtime``; then everything is closed and reopened from the database
alone (process-like: new connections, new saver, new graph), the thread is
read and continued, and an old checkpoint is forked.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from cortex_agents.errors import InvalidArgument, UnsupportedCheckpointer
from cortex_agents.memory import Topological
from cortex_agents.persistence import CortexSaver, Cursor
from cortex_agents.runtime import Runtime, StageContext, TickingClock, load_wire, stage_node
from cortex_agents.substrate import SubstrateLog, append_events
from tests.support.helpers import T0

SYNC = [
    "memory",
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("postgres_pool", marks=pytest.mark.postgres),
]
ASYNC = [
    "async_sqlite",
    pytest.param("async_postgres", marks=pytest.mark.postgres),
    pytest.param("async_postgres_pool", marks=pytest.mark.postgres),
]
FANOUT = load_wire("graphs/fanout_demo.py")
REVIEW_INPUTS = ["analyst-a", "analyst-b", "analyst-c"]


class State(TypedDict, total=False):
    claim: str
    notes: list[str]
    ranking: list[str]
    substrate: Annotated[SubstrateLog, append_events]


def thread(name: str, **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": name, **extra}}


def graph() -> StateGraph:
    """plan -> research -> review; review ranks its memory and records the ranking."""
    clock = TickingClock(T0, timedelta(seconds=1))

    def plan(state: State, ctx: StageContext) -> dict:
        return {"notes": [f"plan: {state['claim']}"]}

    def research(state: State, ctx: StageContext) -> dict:
        return {"notes": [*state["notes"], f"evidence on {state['claim']}"]}

    def review(state: State, ctx: StageContext) -> dict:
        return {"ranking": [m.node_id for m in ctx.memory.recall()]}

    g = StateGraph(State)
    g.add_node("plan", stage_node(plan, kind="planner", clock=clock))
    g.add_node("research", stage_node(research, kind="analyst", after=["plan"], clock=clock))
    g.add_node(
        "review",
        stage_node(review, kind="reviewer", after=["research"], memory=Topological(), clock=clock),
    )
    g.add_edge(START, "plan")
    g.add_edge("plan", "research")
    g.add_edge("research", "review")
    g.add_edge("review", END)
    return g


# -- the savers, opened as their users open them ----------------------------------------------
@contextmanager
def plain_saver(kind: str, where: Any) -> Iterator[Any]:
    """A LangGraph saver on ``where`` (memory: the same saver object every time)."""
    if kind == "memory":
        yield where
    elif kind == "sqlite":
        conn = sqlite3.connect(where, check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()
    elif kind == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection
        from psycopg.rows import dict_row

        with Connection.connect(
            where, autocommit=True, prepare_threshold=0, row_factory=dict_row
        ) as conn:
            saver = PostgresSaver(conn)
            saver.setup()
            yield saver
    elif kind == "postgres_pool":
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        with ConnectionPool(where, min_size=1, max_size=2, kwargs=kwargs) as pool:
            saver = PostgresSaver(pool)
            saver.setup()
            yield saver
    else:  # pragma: no cover
        raise AssertionError(kind)


@asynccontextmanager
async def async_plain_saver(kind: str, where: Any) -> AsyncIterator[Any]:
    if kind == "async_sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(where) as saver:
            yield saver
    elif kind == "async_postgres":
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(where) as saver:
            await saver.setup()
            yield saver
    elif kind == "async_postgres_pool":
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        async with AsyncConnectionPool(
            where, min_size=1, max_size=2, kwargs=kwargs, open=False
        ) as pool:
            saver = AsyncPostgresSaver(pool)
            await saver.setup()
            yield saver
    else:  # pragma: no cover
        raise AssertionError(kind)


@contextmanager
def wrapped(kind: str, where: Any) -> Iterator[CortexSaver]:
    with plain_saver(kind, where) as saver:
        cortex = CortexSaver.wrap(saver)
        try:
            yield cortex
        finally:
            cortex.close()


@asynccontextmanager
async def awrapped(kind: str, where: Any) -> AsyncIterator[CortexSaver]:
    async with async_plain_saver(kind, where) as saver:
        cortex = CortexSaver.wrap(saver)
        try:
            yield cortex
        finally:
            cortex.close()


def location(kind: str, request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    if kind == "memory":
        return InMemorySaver()
    if "sqlite" in kind:
        return str(tmp_path / "app.db")
    return request.getfixturevalue("postgres_url")


# -- checks shared by the sync and async paths ------------------------------------------------
def check_first_run(saver: CortexSaver, out: dict[str, Any], raw: list[Any]) -> None:
    """``raw``: the substrate values LangGraph's own saver stored for thread ``t``."""
    log = out["substrate"]
    assert list(log.state.nodes) == ["plan", "research", "review"]
    assert out["ranking"] == ["research", "plan"]  # the reviewer's memory: its ancestors
    assert log.state.nodes["review"].output == {"ranking": ["research", "plan"]}
    # every event stored once, as a row; LangGraph's checkpoints hold short cursors
    assert saver.store.counts()["events"] == len(log)
    assert raw and all(v is None or Cursor.decode(v) is not None for v in raw)


def check_fork(original: SubstrateLog, forked: dict[str, Any], again: SubstrateLog) -> None:
    nodes = forked["substrate"].state.nodes
    assert list(nodes) == ["plan", "research", "review"]
    assert nodes["research"].output == {"notes": ["plan: coffee", "evidence on tea"]}
    assert again == original  # the original line never sees the fork's events


# -- sync savers ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", SYNC)
def test_every_sync_saver_wrapped_persists_resumes_and_forks(kind, request, tmp_path):
    where = location(kind, request, tmp_path)
    with wrapped(kind, where) as saver:
        out = graph().compile(checkpointer=saver).invoke({"claim": "coffee"}, thread("t"))
        raw = [
            t.checkpoint["channel_values"].get("substrate") for t in saver.inner.list(thread("t"))
        ]
        check_first_run(saver, out, raw)
        result = Runtime(FANOUT, saver).run("w", {"claim": "coffee"})
        assert result.complete
        ranking = result.outputs["reviewer"]["ranking"]
        assert set(REVIEW_INPUTS) <= set(ranking)
    with wrapped(kind, where) as saver:  # reopened from the database alone
        app = graph().compile(checkpointer=saver)
        head = app.get_state(thread("t"))
        original = head.values["substrate"]
        assert original == out["substrate"]
        assert Runtime(FANOUT, saver).result("w").outputs["reviewer"]["ranking"] == ranking
        # fork: back to where research was next, change the claim, run on from there
        after_plan = next(s for s in app.get_state_history(thread("t")) if s.next == ("research",))
        forked = app.invoke(None, app.update_state(after_plan.config, {"claim": "tea"}))
        check_fork(original, forked, app.get_state(head.config).values["substrate"])


@pytest.mark.parametrize("kind", ASYNC)
@pytest.mark.asyncio
async def test_every_async_saver_wrapped_persists_resumes_and_forks(kind, request, tmp_path):
    where = location(kind, request, tmp_path)
    async with awrapped(kind, where) as saver:
        out = await graph().compile(checkpointer=saver).ainvoke({"claim": "coffee"}, thread("t"))
        raw = [
            t.checkpoint["channel_values"].get("substrate")
            async for t in saver.inner.alist(thread("t"))
        ]
        check_first_run(saver, out, raw)
        # the wire runtime is synchronous: LangGraph's async savers serve it from a worker thread
        runtime = Runtime(FANOUT, saver)
        result = await asyncio.to_thread(runtime.run, "w", {"claim": "coffee"})
        assert result.complete
        ranking = result.outputs["reviewer"]["ranking"]
        assert set(REVIEW_INPUTS) <= set(ranking)
    async with awrapped(kind, where) as saver:
        app = graph().compile(checkpointer=saver)
        head = await app.aget_state(thread("t"))
        original = head.values["substrate"]
        assert original == out["substrate"]
        runtime = Runtime(FANOUT, saver)
        reread = await asyncio.to_thread(runtime.result, "w")
        assert reread.outputs["reviewer"]["ranking"] == ranking
        history = [s async for s in app.aget_state_history(thread("t"))]
        after_plan = next(s for s in history if s.next == ("research",))
        forked = await app.ainvoke(
            None, await app.aupdate_state(after_plan.config, {"claim": "tea"})
        )
        check_fork(original, forked, (await app.aget_state(head.config)).values["substrate"])


# -- what wrap builds ---------------------------------------------------------------------------
def test_sqlite_saver_shares_its_connection_and_lock_and_commits_once_per_step(tmp_path):
    conn = sqlite3.connect(tmp_path / "app.db", check_same_thread=False)
    try:
        plain = SqliteSaver(conn)
        saver = CortexSaver.wrap(plain)
        assert saver.store.conn is conn and saver.store._conn_lock is plain.lock
        assert saver.locks.path.name == "app.db.cortex-locks"
        changes = conn.total_changes
        graph().compile(checkpointer=saver).invoke({"claim": "coffee"}, thread("t"))
        assert conn.total_changes > changes and not conn.in_transaction
        assert conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
    finally:
        conn.close()


def test_wrapping_one_in_memory_saver_twice_reads_the_same_events():
    plain = InMemorySaver()
    first = CortexSaver.wrap(plain)
    out = graph().compile(checkpointer=first).invoke({"claim": "coffee"}, thread("t"))
    second = CortexSaver.wrap(plain)
    assert second.store is first.store
    assert second.substrate(thread("t")) == out["substrate"]


def test_wrap_keeps_a_cortex_saver_and_refuses_what_it_does_not_know():
    saver = CortexSaver.wrap(InMemorySaver())
    assert CortexSaver.wrap(saver) is saver
    with pytest.raises(InvalidArgument, match="the channel this CortexSaver already stores"):
        CortexSaver.wrap(saver, channel="other")
    with pytest.raises(InvalidArgument, match=r"`saver` must be one of LangGraph's savers"):
        CortexSaver.wrap(object())  # type: ignore[arg-type]


def test_a_runtime_given_a_plain_saver_wraps_it():
    plain = InMemorySaver()
    runtime = Runtime(FANOUT, plain)
    assert isinstance(runtime.saver, CortexSaver) and runtime.saver.inner is plain
    assert runtime.run("w", {"claim": "coffee"}).complete
    assert runtime.saver.store.counts()["nodes"] == len(FANOUT.stages)


# -- a plain saver alone ------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_plain_saver_fails_at_the_first_stage_with_one_message_naming_wrap(
    kind, request, tmp_path
):
    with plain_saver(kind, location(kind, request, tmp_path)) as plain:
        app = graph().compile(checkpointer=plain)
        with pytest.raises(UnsupportedCheckpointer) as caught:
            app.invoke({"claim": "coffee"}, thread("t"))
        assert "CortexSaver.wrap(saver)" in str(caught.value)
        assert caught.value.checkpointer == type(plain).__name__
        # nothing ran: the first stage failed before its body, no substrate was checkpointed
        assert app.get_state(thread("t")).next == ("plan",)
        assert "substrate" not in plain.get_tuple(thread("t")).checkpoint["channel_values"]


def test_a_cortex_saver_of_another_channel_is_refused_naming_the_channel():
    saver = CortexSaver.wrap(InMemorySaver(), channel="events")
    with pytest.raises(UnsupportedCheckpointer, match=r"channel='substrate'"):
        graph().compile(checkpointer=saver).invoke({"claim": "coffee"}, thread("t"))


def test_without_a_checkpointer_stages_run_in_memory():
    out = graph().compile().invoke({"claim": "coffee"})
    assert list(out["substrate"].state.nodes) == ["plan", "research", "review"]
