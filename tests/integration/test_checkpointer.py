"""CortexSaver under real LangGraph graphs: cursor-sized checkpoints, resume, time travel, forks."""

from __future__ import annotations

import gc
import weakref

import pytest

from cortex_agents.persistence import Cursor, open_saver
from cortex_agents.substrate import SubstrateLog
from tests.support.graphs import chain_graph, expected_log


def config(thread: str = "t1", **extra) -> dict:
    return {"configurable": {"thread_id": thread, **extra}}


def test_run_history_and_raw_checkpoints(open_db):
    with open_db() as saver:
        app = chain_graph().compile(checkpointer=saver)
        out = app.invoke({"goal": 12}, config())
        assert out["substrate"] == expected_log(12)
        assert app.get_state(config()).values["substrate"] == expected_log(12)
        history = list(app.get_state_history(config()))
        for snapshot in history:
            steps = snapshot.values.get("steps", 0)
            assert snapshot.values.get("substrate", SubstrateLog()) == expected_log(steps)
        # what LangGraph stored is a short cursor, never the log; each event stored once
        for raw in saver.inner.list(config()):
            value = raw.checkpoint["channel_values"].get("substrate")
            assert value is None or (Cursor.decode(value) is not None and len(value) < 40)
        assert saver.store.counts()["events"] == len(expected_log(12))


def test_the_saver_remembers_cursors_and_hashes_not_the_runs_logs(open_db):
    with open_db() as saver:
        app = chain_graph().compile(checkpointer=saver)
        out = app.invoke({"goal": 12}, config())
        assert saver.cache_sizes()["cursors"] > 0
        run_branch = weakref.ref(out["substrate"].branch)
        del out
        gc.collect()
        assert run_branch() is None  # nothing the saver remembers keeps the run's branch alive
        more = app.invoke({"goal": 15}, config())  # its parent read back through the store
        assert more["substrate"] == expected_log(15)
        assert saver.store.counts()["events"] == len(expected_log(15))  # only the new ones added


def test_state_survives_closing_the_database(durable_database):
    with open_saver(durable_database) as saver:
        chain_graph().compile(checkpointer=saver).invoke({"goal": 5}, config())
    with open_saver(durable_database) as saver:
        app = chain_graph().compile(checkpointer=saver)
        assert app.get_state(config()).values["substrate"] == expected_log(5)
        out = app.invoke({"goal": 9}, config())  # continue the thread
        assert out["substrate"] == expected_log(9)
        assert saver.store.counts()["events"] == len(expected_log(9))


def test_time_travel_forks_without_leaking_either_way(open_db):
    with open_db() as saver:
        app = chain_graph().compile(checkpointer=saver)
        app.invoke({"goal": 8}, config())
        at_three = next(s for s in app.get_state_history(config()) if s.values.get("steps") == 3)
        forked = app.invoke({"label": "fork"}, at_three.config)
        assert forked["substrate"] == expected_log(8, dict.fromkeys(range(3, 8), "fork"))
        # the original line is intact, and its checkpoints still read the original events
        original = [s for s in app.get_state_history(config()) if s.values.get("steps") == 8]
        logs = [s.values["substrate"] for s in original]
        assert (
            expected_log(8) in logs and expected_log(8, dict.fromkeys(range(3, 8), "fork")) in logs
        )
        # continuing the fork keeps it apart from the original
        more = app.invoke({"goal": 10}, config())
        assert more["substrate"] == expected_log(10, dict.fromkeys(range(3, 10), "fork"))
        assert at_three.values["substrate"] == expected_log(3)


def test_update_state_on_an_old_checkpoint_branches(open_db):
    with open_db() as saver:
        app = chain_graph().compile(checkpointer=saver)
        app.invoke({"goal": 6}, config())
        at_two = next(s for s in app.get_state_history(config()) if s.values.get("steps") == 2)
        updated = app.update_state(at_two.config, {"label": "edited"}, as_node="step")
        assert app.get_state(updated).values["substrate"] == expected_log(2)
        out = app.invoke(None, updated)
        assert out["substrate"] == expected_log(6, dict.fromkeys(range(2, 6), "edited"))
        head_six = [s for s in app.get_state_history(config()) if s.values.get("steps") == 6]
        assert {len(s.values["substrate"]) for s in head_six} == {len(expected_log(6))}
        assert expected_log(6) in [s.values["substrate"] for s in head_six]


def test_a_crash_between_events_and_checkpoint_resumes_exactly(open_db, monkeypatch):
    with open_db() as saver:
        app = chain_graph().compile(checkpointer=saver)
        app.invoke({"goal": 4}, config(), durability="sync")
        joint = saver._joint_store() is not None  # SQLite: events and checkpoint in one transaction
        owner = type(saver.inner) if joint else saver.inner
        real_put = owner.put
        committed = len(expected_log(4))

        def dies_after_events(*args):
            checkpoint = args[-3]
            cursor = Cursor.decode(checkpoint["channel_values"].get("substrate"))
            if cursor is not None and cursor.seq > committed:  # its events are already written
                raise SystemExit("killed between the events and the checkpoint")
            return real_put(*args)

        monkeypatch.setattr(owner, "put", dies_after_events)
        with pytest.raises(SystemExit):
            app.invoke({"goal": 9}, config(), durability="sync")
        monkeypatch.setattr(owner, "put", real_put)
        # the last committed checkpoint still points at the 4-step substrate ...
        raw = saver.inner.get_tuple(config()).checkpoint["channel_values"]["substrate"]
        assert Cursor.decode(raw).seq == committed
        # ... while the crashed step's events are on disk beyond it, or, written in the
        # checkpoint's own transaction, were rolled back with it
        stored = saver.store.counts()["events"]
        assert stored == (committed if joint else len(expected_log(5)))
        survived = app.get_state(config()).values  # LangGraph applies the step's pending writes
        assert survived["substrate"] == expected_log(survived["steps"])
        out = app.invoke({"goal": 9}, config(), durability="sync")
        assert out["substrate"] == expected_log(9)
        # the re-executed step adopted (or rewrote) its rows: nothing stored twice
        assert saver.store.counts() == {
            "branches": 1,
            "events": len(expected_log(9)),
            "nodes": 9,
            "edges": 8,
        }


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_every_durability_mode_stores_the_same_substrate(open_db, durability):
    with open_db() as saver:
        app = chain_graph().compile(checkpointer=saver)
        app.invoke({"goal": 7}, config(durability), durability=durability)
        assert app.get_state(config(durability)).values["substrate"] == expected_log(7)


@pytest.mark.asyncio
async def test_async_graphs_use_the_same_tables(tmp_path):
    from cortex_agents.persistence import aopen_saver

    path = tmp_path / "async.db"
    async with aopen_saver(path) as saver:
        app = chain_graph().compile(checkpointer=saver)
        out = await app.ainvoke({"goal": 6}, config())
        assert out["substrate"] == expected_log(6)
        history = [s async for s in app.aget_state_history(config())]
        assert all(
            s.values.get("substrate", SubstrateLog()) == expected_log(s.values.get("steps", 0))
            for s in history
        )
    with open_saver(path) as saver:  # the sync saver reads what the async one wrote
        assert saver.substrate(config()) == expected_log(6)


def test_sqlite_pragmas_are_set(tmp_path):
    with open_saver(tmp_path / "p.db") as saver:
        conn = saver.store.conn
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    with open_saver(tmp_path / "n.db", synchronous="NORMAL") as saver:
        assert saver.store.conn.execute("PRAGMA synchronous").fetchone()[0] == 1


@pytest.mark.asyncio
async def test_the_async_sqlite_connection_gets_the_same_pragmas(tmp_path):
    from cortex_agents.persistence import aopen_saver

    async with aopen_saver(tmp_path / "a.db", synchronous="NORMAL") as saver:
        conn = saver.inner.conn  # the aiosqlite connection LangGraph's AsyncSqliteSaver uses
        values = {}
        for pragma in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout"):
            async with conn.execute(f"PRAGMA {pragma}") as cursor:
                values[pragma] = (await cursor.fetchone())[0]
    assert values == {
        "journal_mode": "wal",
        "synchronous": 1,
        "foreign_keys": 1,
        "busy_timeout": 5000,
    }
