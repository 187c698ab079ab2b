"""A solo task's pending writes, held and stored with the next checkpoint (persistence/solo.py).

Each test is one way a wrong implementation loses, changes or delays a write:
rows that differ from those stored at once, writes dropped when the merged
commit fails, a sibling's writes held, writes held without the lock, a
checkpoint that overtakes the writes it should carry, durability modes whose
writes go missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from cortex_agents.errors import StorageError, WriterFenced
from cortex_agents.persistence import aopen_saver, is_postgres_url, open_saver
from cortex_agents.persistence._solo import SoloWrites
from cortex_agents.runtime import LogicalClock, Runtime, TickingClock, WireBuilder, build_graph
from cortex_agents.substrate import StageCompleted
from tests.support.graphs import expected_log
from tests.support.helpers import T0

WRITES = [("substrate", [{"a": 1}]), ("scanned", 3), ("branch:to:x", None)]  # a stage's three


def chain(n: int) -> Any:
    builder = WireBuilder(f"chain{n}").kind("step", lambda ctx: {"i": ctx.stage_id})
    for i in range(n):
        builder.stage(f"s{i:02d}", "step", after=[f"s{i - 1:02d}"] if i else [])
    return builder.build()


def diamond() -> Any:
    """a -> (b, c, d) -> e: b, c and d share a superstep; a and e are alone in theirs."""
    builder = WireBuilder("diamond").kind("step", lambda ctx: {"i": ctx.stage_id})
    builder.stage("a", "step")
    for middle in ("b", "c", "d"):
        builder.stage(middle, "step", after=["a"])
    builder.stage("e", "step", after=["b", "c", "d"])
    return builder.build()


def writes_of(db: str, thread: str) -> list[tuple[Any, ...]]:
    """``(checkpoint_id, task_id, task_path, idx, channel, type, value)`` of the thread's writes."""
    if is_postgres_url(db):
        import psycopg

        sql = (
            "SELECT checkpoint_id, task_id, task_path, idx, channel, type, blob "
            "FROM checkpoint_writes WHERE thread_id = %s"
        )
        with psycopg.connect(db) as conn:
            rows = conn.execute(sql, (thread,)).fetchall()
    else:
        import sqlite3

        conn = sqlite3.connect(db)
        try:
            # older langgraph-checkpoint-sqlite releases (the floors) have no task_path column
            columns = {row[1] for row in conn.execute("PRAGMA table_info(writes)")}
            path = "task_path" if "task_path" in columns else "''"
            sql = (
                f"SELECT checkpoint_id, task_id, {path}, idx, channel, type, value "
                "FROM writes WHERE thread_id = ?"
            )
            rows = conn.execute(sql, (thread,)).fetchall()
        finally:
            conn.close()
    return sorted(rows, key=repr)


def config(thread: str, checkpoint_id: str | None = None) -> Any:
    configurable = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def two_checkpoints() -> tuple[Any, Any]:
    """A first checkpoint (the task runs at it) and its child, both with substrate events."""
    first, second = empty_checkpoint(), empty_checkpoint()
    # fixed ids: two threads written alike hold the same rows
    first["id"], second["id"] = (f"1f0c0000-0000-6000-8000-00000000000{i}" for i in (1, 2))
    first["channel_values"]["substrate"] = expected_log(1)
    second["channel_values"]["substrate"] = expected_log(2)
    return first, second


def commit_step(db: str, saver: Any, thread: str, *, solo: bool) -> tuple[Any, Any]:
    """Checkpoint, the task's writes, the next checkpoint: the writes stored after each call."""
    first, second = two_checkpoints()
    stored = saver.put(config(thread), first, {"source": "input", "step": -1}, {})
    if solo:
        assert saver.expect_solo_writes(thread, first["id"], "task")
    saver.put_writes(stored, WRITES, "task", "path")
    after_writes = writes_of(db, thread)
    saver.put(stored, second, {"source": "loop", "step": 0}, {})
    return after_writes, writes_of(db, thread)


def begin(saver: Any, thread: str, task: str = "task") -> tuple[Any, Any, bool]:
    """The thread's first checkpoint stored and ``task`` registered as solo at it:
    ``(the stored config, the next checkpoint, whether the saver holds its writes)``."""
    first, second = two_checkpoints()
    stored = saver.put(config(thread), first, {"source": "input", "step": -1}, {})
    return stored, second, saver.expect_solo_writes(thread, first["id"], task)


def opened(db: str) -> Any:
    context = open_saver(db)
    return context, context.__enter__()


def test_held_writes_land_as_the_rows_written_at_once(durable_database):
    db = durable_database
    context, saver = opened(db)
    try:
        with saver.lock("held"):
            held_then, held_rows = commit_step(db, saver, "held", solo=True)
        with saver.lock("plain"):
            plain_then, plain_rows = commit_step(db, saver, "plain", solo=False)
    finally:
        context.__exit__(None, None, None)
    assert held_then == [] and len(plain_then) == len(WRITES)  # held, then stored
    assert held_rows == plain_rows


def test_a_failed_merged_commit_leaves_the_writes_durable(durable_database, monkeypatch):
    db = durable_database
    context, saver = opened(db)
    try:
        with saver.lock("plain"):
            _, plain_rows = commit_step(db, saver, "plain", solo=False)
        failing = StorageError("io_error", "the disk went away")

        def fail(*args: Any, **kwargs: Any) -> Any:
            raise failing

        with saver.lock("t"):
            stored, second, holds = begin(saver, "t")
            assert holds
            saver.put_writes(stored, WRITES, "task", "path")
            assert writes_of(db, "t") == []
            monkeypatch.setattr(saver.store, "append", fail)  # the checkpoint's events fail
            with pytest.raises(StorageError) as raised:
                saver.put(stored, second, {"source": "loop", "step": 0}, {})
            assert raised.value is failing and not getattr(failing, "__notes__", None)
            assert writes_of(db, "t") == plain_rows  # stored alone, at once
            assert len(saver._solo) == 0
    finally:
        context.__exit__(None, None, None)


def test_a_fenced_merged_commit_writes_nothing_and_says_why_in_a_note(durable_database):
    db = durable_database
    context, saver = opened(db)
    try:
        with saver.lock("t"):
            stored, second, _ = begin(saver, "t")
            saver.put_writes(stored, WRITES, "task", "path")
            with open_saver(db) as other:
                other.store.claim_writer("t")  # another writer took the thread
            with pytest.raises(WriterFenced) as raised:
                saver.put(stored, second, {"source": "loop", "step": 0}, {})
            notes = getattr(raised.value, "__notes__", [])
            assert any("held writes alone also failed" in n for n in notes), notes
            assert writes_of(db, "t") == []  # the writes of a fenced writer never land
    finally:
        context.__exit__(None, None, None)


def test_a_siblings_writes_are_durable_at_once(durable_database):
    db = durable_database
    context, saver = opened(db)
    try:
        with saver.lock("t"):
            stored, _, _ = begin(saver, "t", "solo-task")
            saver.put_writes(stored, WRITES, "sibling", "path")
            assert len(writes_of(db, "t")) == len(WRITES)
            errors = [("__error__", "boom")]  # LangGraph's special writes: never held
            saver.put_writes(stored, errors, "solo-task", "path")
            assert len(writes_of(db, "t")) == len(WRITES) + 1
            assert len(saver._solo) == 0
    finally:
        context.__exit__(None, None, None)


def test_without_the_lock_nothing_is_held(durable_database):
    db = durable_database
    context, saver = opened(db)
    try:
        stored, _, holds = begin(saver, "t")
        assert not holds
        saver.put_writes(stored, WRITES, "task", "path")
        assert len(writes_of(db, "t")) == len(WRITES)
    finally:
        context.__exit__(None, None, None)


@pytest.mark.parametrize("late", [False, True], ids=["writes-while-waiting", "writes-too-late"])
def test_a_checkpoint_that_overtakes_its_writes_waits_for_them_or_lets_them_land_alone(
    durable_database, monkeypatch, late
):
    """LangGraph runs ``put_writes`` and ``put`` in a pool: the put may start first."""
    db = durable_database
    context, saver = opened(db)
    if late:  # the writes never come in time: the checkpoint goes alone, then the writes
        saver._solo = SoloWrites(timeout=0.0)
    waiting = threading.Event()
    take = saver._solo.take
    taken: list[Any] = []

    def entered(*args: Any) -> Any:
        waiting.set()
        taken.append(take(*args))
        return taken[-1]

    alone: list[str] = []
    store_held = saver._store_held
    monkeypatch.setattr(
        saver, "_store_held", lambda *a, **k: alone.append("held") or store_held(*a, **k)
    )
    try:
        with saver.lock("t"):
            stored, second, _ = begin(saver, "t")
            monkeypatch.setattr(saver._solo, "take", entered)
            put = threading.Thread(
                target=saver.put, args=(stored, second, {"source": "loop", "step": 0}, {})
            )
            put.start()
            assert waiting.wait(10)
            if late:
                put.join()
                assert writes_of(db, "t") == []
            saver.put_writes(stored, WRITES, "task", "path")
            put.join()
            assert len(writes_of(db, "t")) == len(WRITES)
            assert saver.get_tuple(config("t")).checkpoint["id"] == second["id"]
            assert alone == [] and len(saver._solo) == 0
            assert (taken[0] is None) == late  # merged into the checkpoint, unless too late
    finally:
        context.__exit__(None, None, None)


def normalised_writes(db: str, thread: str, saver: Any) -> list[tuple[Any, ...]]:
    """The thread's pending writes, checkpoint ids as their order of appearance and task ids
    as the order of the tasks' rows (older savers store no task path to order them by)."""
    order = [t.config["configurable"]["checkpoint_id"] for t in saver.list(config(thread))][::-1]
    by_task: dict[tuple[int, str], list[tuple[Any, ...]]] = {}
    for row in writes_of(db, thread):
        by_task.setdefault((order.index(row[0]), row[1]), []).append(tuple(row[2:]))
    tasks = sorted((checkpoint, sorted(rows)) for (checkpoint, _), rows in by_task.items())
    return [(checkpoint, n, *row) for n, (checkpoint, rows) in enumerate(tasks) for row in rows]


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
@pytest.mark.parametrize("wire", [chain(5), diamond()], ids=["chain", "diamond"])
def test_a_runs_rows_equal_those_of_a_run_that_holds_nothing(
    durable_database, monkeypatch, durability, wire
):
    db = durable_database
    held: list[int] = []
    with open_saver(db) as saver:
        expected: list[Any] = []
        expect = saver._solo.expect
        monkeypatch.setattr(saver._solo, "expect", lambda *a: expected.append(a) or expect(*a))
        take = saver._solo.take
        monkeypatch.setattr(
            saver._solo, "take", lambda *a: (lambda h: held.append(h is not None) or h)(take(*a))
        )
        runtime = Runtime(wire, saver, clock=LogicalClock(T0), durability=durability)
        held_result = runtime.run("held")
        merged = sum(held)
        monkeypatch.setattr(saver, "expect_solo_writes", lambda *a: False)
        runtime = Runtime(wire, saver, clock=LogicalClock(T0), durability=durability)
        plain_result = runtime.run("plain")
        assert held_result.complete and held_result.log == plain_result.log
        assert normalised_writes(db, "held", saver) == normalised_writes(db, "plain", saver)
        assert len(saver._solo) == 0
    solos = {"chain5": 5, "diamond": 2}[wire.name]
    # under "exit" LangGraph stores no finished superstep's writes: none to hold
    assert merged == len(expected) == (0 if durability == "exit" else solos)
    with open_saver(db) as fresh:  # read back from the rows alone
        assert fresh.substrate(config("held")) == held_result.log


def test_an_async_run_holds_and_stores_as_a_sync_one(durable_database):
    db = durable_database
    wire = chain(4)
    start = {"scanned": None, "retry": True}

    merged: list[bool] = []

    async def run(thread: str, hold: bool) -> Any:
        async with aopen_saver(db) as saver:
            take = saver._solo.take
            saver._solo.take = lambda *a: (lambda h: merged.append(h is not None) or h)(take(*a))
            if not hold:
                saver.expect_solo_writes = lambda *a: False
            app = build_graph(wire, saver, TickingClock(T0)).compile(checkpointer=saver)
            async with saver.alock(thread):
                await app.ainvoke(start, config(thread))
            assert len(saver._solo) == 0
            return [t async for t in saver.alist(config(thread))]

    held = asyncio.run(run("held", True))
    assert sum(merged) == len(wire.stages)  # every stage of a chain is alone in its superstep
    plain = asyncio.run(run("plain", False))
    assert [t.checkpoint["channel_values"].get("substrate") for t in held] == [
        t.checkpoint["channel_values"].get("substrate") for t in plain
    ]
    with open_saver(db) as saver:
        assert normalised_writes(db, "held", saver) == normalised_writes(db, "plain", saver)
        assert len(normalised_writes(db, "held", saver)) > 0


@pytest.mark.parametrize("raising", [False, True], ids=["returns", "raises"])
def test_writes_no_checkpoint_took_are_stored_when_the_lock_is_released(durable_database, raising):
    db = durable_database
    context, saver = opened(db)
    try:
        with (
            pytest.raises(KeyError) if raising else contextlib.nullcontext(),
            saver.lock("t"),
        ):
            stored, _, _ = begin(saver, "t")
            saver.put_writes(stored, WRITES, "task", "path")
            assert writes_of(db, "t") == []  # held: no checkpoint came after it
            if raising:
                raise KeyError("the invocation's own error")
        assert len(writes_of(db, "t")) == len(WRITES) and len(saver._solo) == 0
    finally:
        context.__exit__(None, None, None)


def test_async_lock_release_under_an_error_stores_held_writes_and_keeps_that_error(
    durable_database, monkeypatch
):
    """``alock`` hands the invocation's error to the release: a failed store is its note."""
    db = durable_database

    async def invocation(saver: Any, thread: str, fail_store: bool) -> None:
        async with saver.alock(thread):
            first, _ = two_checkpoints()
            stored = await saver.aput(config(thread), first, {"step": -1}, {})
            assert saver.expect_solo_writes(thread, first["id"], "task")
            await saver.aput_writes(stored, WRITES, "task", "path")  # held, on the loop
            assert writes_of(db, thread) == []
            if fail_store:
                failing = StorageError("io_error", "the disk went away")

                def broken(*args: Any, **kwargs: Any) -> Any:
                    raise failing

                monkeypatch.setattr(saver._fencing, "atomic", broken)
            raise KeyError("the invocation's own error")

    async def run(fail_store: bool) -> BaseException:
        async with aopen_saver(db) as saver:
            thread = "fails" if fail_store else "stores"
            with pytest.raises(KeyError) as raised:
                await invocation(saver, thread, fail_store)
            assert len(saver._solo) == 0
            return raised.value

    error = asyncio.run(run(False))
    assert not getattr(error, "__notes__", None)
    assert len(writes_of(db, "stores")) == len(WRITES)
    error = asyncio.run(run(True))  # the run's error, not the store's, with a note saying so
    assert any("held writes alone also failed" in n for n in error.__notes__), error
    assert writes_of(db, "fails") == []


def completes(writes: Any, stage: str) -> bool:
    """Whether a ``put_writes`` call carries the completion of ``stage``."""
    return any(
        channel == "substrate"
        and any(e.get("type") == "stage_completed" and e.get("node_id") == stage for e in value)
        for channel, value in writes
    )


def test_a_stream_stopped_early_stores_everything_before_the_lock_is_released(
    durable_database, monkeypatch
):
    """Closing ``Runtime.stream`` mid-run: LangGraph's pending stores end under the lock.

    The consumer stops on a solo stage's completion, whose ``put_writes`` LangGraph
    has handed to its background pool. Were the lock released first, those writes (and
    any checkpoint in flight) would land unfenced, after the lock's flush, while another
    writer may hold the thread.
    """
    db = durable_database
    with open_saver(db) as saver:
        runtime = Runtime(chain(4), saver, clock=LogicalClock(T0))
        closed = threading.Event()
        locked: list[bool] = []
        put_writes = runtime.saver.put_writes

        def store(config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            if completes(writes, "s01"):
                closed.wait(1.0)  # a bound: with the lock held to the end, nothing sets it
            locked.append(runtime.saver._writers.get("t") is not None)
            put_writes(config, writes, task_id, task_path)

        monkeypatch.setattr(runtime.saver, "put_writes", store)
        stream = runtime.stream("t")
        for progress in stream:
            if isinstance(progress.event, StageCompleted) and progress.event.node_id == "s01":
                break
        stream.close()
        closed.set()
        assert locked and all(locked), locked  # every write stored while the lock was held
        assert len(saver._solo) == 0
        monkeypatch.undo()
        finished = runtime.run("t")  # and the thread finishes as an uninterrupted run does
        reference = Runtime(chain(4), saver, clock=LogicalClock(T0)).run("reference")
        assert finished.complete and finished.log.state.nodes == reference.log.state.nodes


def test_a_task_that_ends_as_the_lock_is_released_has_its_writes_stored(
    durable_database, monkeypatch
):
    """A solo task still running when the lock goes (an async stream its consumer left,
    a stage streaming tokens) may end between the lock's last flush and the release:
    its writes must then be stored, not held for a checkpoint no flush will see."""
    db = durable_database
    context, saver = opened(db)
    registered: list[bool] = []
    try:
        with saver.lock("t"):
            first, _ = two_checkpoints()
            stored = saver.put(config("t"), first, {"source": "input", "step": -1}, {})
            drain = saver._solo.drain

            def then_a_task_ends(*args: Any, **kwargs: Any) -> Any:
                drained = drain(*args, **kwargs)  # the lock's last flush
                registered.append(saver.expect_solo_writes("t", first["id"], "task"))
                saver.put_writes(stored, WRITES, "task", "path")  # the lock is still held
                return drained

            monkeypatch.setattr(saver._solo, "drain", then_a_task_ends)
        assert registered == [False]  # no registration outlives the lock's last flush
        assert len(writes_of(db, "t")) == len(WRITES) and len(saver._solo) == 0
    finally:
        context.__exit__(None, None, None)
