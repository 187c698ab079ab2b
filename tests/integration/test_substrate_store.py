"""The substrate store protocol, the same suite on every backend."""

from __future__ import annotations

import pytest

from cortex_agents.errors import StorageError
from cortex_agents.persistence import Cursor, open_saver
from cortex_agents.substrate import EdgeAdded, SubstrateLog, event_from_dict
from tests.support.graphs import expected_log, stage_events
from tests.support.helpers import at


def events(i: int, label: str = "main"):
    return [event_from_dict(e) for e in stage_events(i, label)]


def test_append_extends_the_head_and_reads_back_exactly(open_db):
    with open_db() as saver:
        store = saver.store
        first = store.append("t", "", None, events(0))
        assert first.seq == 3
        second = store.append("t", "", first, events(1))
        assert second == Cursor(first.branch, 7)
        assert store.read("t", "", second) == expected_log(2)
        assert store.read("t", "", first) == expected_log(1)
        assert store.counts() == {"branches": 1, "events": 7, "nodes": 2, "edges": 1}
        # appending nothing writes nothing
        assert store.append("t", "", second, []) == second
        assert store.counts()["events"] == 7


def test_a_non_head_parent_forks_and_the_lines_never_mix(open_db):
    with open_db() as saver:
        store = saver.store
        one = store.append("t", "", None, events(0))
        main = store.append("t", "", one, events(1))
        fork = store.append("t", "", one, events(1, "fork"))
        assert fork.branch != main.branch and fork.seq == main.seq
        assert store.read("t", "", main) == expected_log(2)
        assert store.read("t", "", fork) == expected_log(2, {1: "fork"})
        # both lines keep growing independently
        main2 = store.append("t", "", main, events(2))
        fork2 = store.append("t", "", fork, events(2, "fork"))
        assert store.read("t", "", main2) == expected_log(3)
        assert store.read("t", "", fork2) == expected_log(3, {1: "fork", 2: "fork"})
        assert store.counts()["branches"] == 2


def test_reading_after_a_restart_rebuilds_from_rows(durable_database):
    open_db = lambda: open_saver(durable_database)  # noqa: E731
    with open_db() as saver:
        one = saver.store.append("t", "", None, events(0))
        fork = saver.store.append("t", "", saver.store.append("t", "", one, events(1)), events(2))
        side = saver.store.append("t", "", one, events(1, "x"))
    with open_db() as saver:  # a fresh process would start with empty caches, as here
        assert saver.store.read("t", "", fork) == expected_log(3)
        assert saver.store.read("t", "", side) == expected_log(2, {1: "x"})


def test_threads_are_isolated(open_db):
    with open_db() as saver:
        store = saver.store
        a = store.append("thread-a", "", None, events(0))
        b = store.append("thread-b", "", None, events(0, "b"))
        assert store.read("thread-b", "", b) == expected_log(1, {0: "b"})
        with pytest.raises(StorageError, match="another thread"):
            store.read("thread-b", "", a)
        with pytest.raises(StorageError, match="another thread"):
            store.append("thread-b", "", a, events(1))
        assert store.threads() == ["thread-a", "thread-b"]


def test_the_database_rejects_an_edge_to_a_missing_node(open_db):
    with open_db() as saver:
        store = saver.store
        head = store.append("t", "", None, events(0))
        before = store.counts()
        dangling = [EdgeAdded(source="stage-0000", target="ghost", at=at(1))]
        with pytest.raises(StorageError) as caught:
            store.append("t", "", head, dangling)
        assert caught.value.code == "integrity"
        assert store.counts() == before  # rolled back: nothing written


def test_a_rolled_back_new_branch_leaves_nothing_behind_for_the_next_one(open_db):
    with open_db() as saver:
        store = saver.store
        store.append("alice", "", None, events(0))
        bad = [*events(0, "x"), EdgeAdded(source="stage-0000", target="ghost", at=at(1))]
        with pytest.raises(StorageError):
            store.append("alice", "", None, bad)  # a new root branch, rolled back
        bob = store.append("bob", "", None, events(0))  # SQLite may reuse the rolled-back key
        bob = store.append("bob", "", bob, events(1))
        assert store.read("bob", "", bob) == expected_log(2)
        with pytest.raises(StorageError):
            store.append("alice", "", store.append("alice", "", None, events(0)), bad[-1:])
        assert store.read("bob", "", bob) == expected_log(2)


def test_a_fork_cannot_see_nodes_scheduled_after_its_base(open_db):
    with open_db() as saver:
        store = saver.store
        one = store.append("t", "", None, events(0))
        store.append("t", "", one, events(1))  # stage-0001 exists on the main line only
        edge = [EdgeAdded(source="stage-0000", target="stage-0001", at=at(2))]
        with pytest.raises(StorageError):
            store.append("t", "", one, edge)  # on the fork, stage-0001 does not exist


def test_cursor_beyond_the_stored_events_is_refused(open_db):
    with open_db() as saver:
        head = saver.store.append("t", "", None, events(0))
        with pytest.raises(StorageError, match="not stored"):
            saver.store.read("t", "", Cursor(head.branch, head.seq + 5))


def test_delete_thread_removes_every_row_of_that_thread_only(open_db):
    with open_db() as saver:
        store = saver.store
        keep = store.append("keep", "", None, events(0))
        gone = store.append("gone", "", None, events(0))
        store.append("gone", "", gone, events(1))
        store.append("gone", "", gone, events(1, "fork"))
        store.delete_thread("gone")
        assert store.threads() == ["keep"]
        assert store.counts() == {"branches": 1, "events": 3, "nodes": 1, "edges": 0}
        assert store.read("keep", "", keep) == expected_log(1)


def test_empty_cursor_is_the_empty_log(open_db):
    with open_db() as saver:
        assert saver.store.read("t", "", Cursor(0, 0)) == SubstrateLog()


def test_re_appending_the_stored_events_after_a_cursor_adopts_them(open_db):
    with open_db() as saver:
        store = saver.store
        one = store.append("t", "", None, events(0))
        head = store.append("t", "", one, events(1))
        before = store.counts()
        again = store.append("t", "", one, events(1))  # a re-executed step: same events
        assert again == head
        assert store.counts() == before  # nothing written twice
        different = store.append("t", "", one, events(1, "other"))
        assert different.branch != head.branch


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_delete_thread_takes_the_non_string_ids_langgraph_accepts(backend, tmp_path):
    # LangGraph's SQLite and in-memory savers accept a UUID thread id (its Postgres saver does not)
    import uuid
    from contextlib import nullcontext

    from cortex_agents.persistence import memory_saver
    from tests.support.graphs import chain_graph

    thread = uuid.UUID(int=7)
    config = {"configurable": {"thread_id": thread}}
    opened = nullcontext(memory_saver()) if backend == "memory" else open_saver(tmp_path / "u.db")
    with opened as saver:
        chain_graph().compile(checkpointer=saver).invoke({"goal": 2}, config)
        assert saver.store.threads() == [str(thread)]
        saver.delete_thread(thread)
        assert saver.store.threads() == []
        assert saver.get_tuple(config) is None
        with saver.lock(thread):  # locks take it too
            pass


def test_a_large_append_is_stored_whole_and_checked_like_a_small_one(open_db):
    """One append of many rows (an import; Postgres inserts it as one statement over arrays)."""
    from cortex_agents.substrate import NodeScheduled

    many = [NodeScheduled(node_id=f"n{i:03d}", kind="k", at=at(0)) for i in range(150)]
    many += [EdgeAdded(source="n000", target=f"n{i:03d}", at=at(0)) for i in range(1, 150)]
    with open_db() as saver:
        store = saver.store
        head = store.append("t", "", None, many)
        assert store.counts() == {"branches": 1, "events": 299, "nodes": 150, "edges": 149}
        assert list(store.read("t", "", head)) == many
        before = store.counts()
        ghosts = [EdgeAdded(source="n000", target=f"ghost{i}", at=at(1)) for i in range(100)]
        with pytest.raises(StorageError) as caught:  # every endpoint checked, in a batch too
            store.append("t", "", head, ghosts)
        assert caught.value.code == "integrity" and store.counts() == before
        other = [EdgeAdded(source="n001", target=f"n{i:03d}", at=at(0)) for i in range(2, 150)]
        fork = store.append("t", "", Cursor(head.branch, 150), other)  # its nodes: the base's
        assert store.counts()["edges"] == 149 + 148 and fork.branch != head.branch
