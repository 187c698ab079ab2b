"""Seed 004's query helpers over a stored thread, and schema migrations."""

from __future__ import annotations

import pytest

from cortex_agents.errors import InvalidArgument, StorageError, UnknownNode
from cortex_agents.persistence import import_document, open_saver, open_view
from cortex_agents.snapshotfile import SnapshotDocument
from cortex_agents.substrate import EdgeRecord, NodeRecord
from tests.support.helpers import T0, at


def workflow() -> SnapshotDocument:
    """root -> a, b; a -> c; b -> c; c -> d; with tags and staggered completion times."""

    def n(node_id, kind, minute, tags=(), status="completed"):
        return NodeRecord(
            id=node_id,
            kind=kind,
            status=status,
            captured_at=at(minute - 1),
            completed_at=at(minute) if status == "completed" else None,
            attempts=0 if status == "pending" else 1,
            tags=tags,
            output={"text": node_id},
        )

    nodes = (
        n("root", "planner", 1, ("start",)),
        n("b", "analyst", 3, ("claim",)),
        n("a", "analyst", 3, ("claim",)),
        n("c", "merge", 5),
        n("d", "reviewer", 7, status="pending"),
    )
    edges = tuple(
        EdgeRecord(s, t)
        for s, t in [("root", "a"), ("root", "b"), ("a", "c"), ("b", "c"), ("c", "d")]
    )
    return SnapshotDocument(run_id="ops", entry_time=at(10), nodes=nodes, edges=edges)


@pytest.fixture
def view(open_db):
    with open_db() as saver:
        import_document(saver, "ops", workflow())
        yield open_view(saver, "ops")


def test_lineage_is_bfs_ordered_by_depth_then_id(view):
    assert view.lineage("d") == (("c", 1), ("a", 2), ("b", 2), ("root", 3))
    assert view.lineage("d", max_depth=2) == (("c", 1), ("a", 2), ("b", 2))
    assert view.lineage("root") == ()
    with pytest.raises(UnknownNode):
        view.lineage("ghost")
    with pytest.raises(InvalidArgument, match="max_depth"):
        view.lineage("d", max_depth=0)


def test_neighbors_by_direction(view):
    assert view.neighbors("c") == ("a", "b", "d")
    assert view.neighbors("c", "upstream") == ("a", "b")
    assert view.neighbors("c", "downstream") == ("d",)
    with pytest.raises(InvalidArgument, match="direction"):
        view.neighbors("c", "sideways")


def test_recent_and_since_are_settled_only_with_ties_by_id(view):
    assert [x.id for x in view.recent(10)] == ["c", "a", "b", "root"]
    assert [x.id for x in view.recent(2)] == ["c", "a"]
    assert [x.id for x in view.recent(5, kind="analyst")] == ["a", "b"]
    assert [x.id for x in view.since(at(3))] == ["a", "b", "c"]
    assert [x.id for x in view.since(at(3), kind="merge")] == ["c"]
    with pytest.raises(InvalidArgument):
        view.since(at(3).replace(tzinfo=None))


def test_by_tag_orders_by_scheduling_time_then_id(view):
    assert [x.id for x in view.by_tag("claim")] == ["a", "b"]
    assert view.by_tag("nothing") == ()


def test_snapshot_as_of_a_time_or_an_event_count(view):
    full = view.snapshot()
    assert set(full.nodes) == {"root", "a", "b", "c", "d"}
    early = view.snapshot(as_of=at(3))
    assert early.captured_at == at(3)
    assert {k for k, v in early.nodes.items() if v.settled} == {"root", "a", "b"}
    assert "c" not in early.nodes  # scheduled at minute 4
    assert view.snapshot(as_of=at(4.5)).nodes["c"].status == "running"
    first = view.snapshot(seq=1)
    assert list(first.nodes) == ["root"] and first.captured_at == T0
    with pytest.raises(InvalidArgument):
        view.snapshot(as_of=at(3), seq=2)


def test_setup_is_idempotent_and_refuses_a_newer_schema(durable_database):
    with open_saver(durable_database):
        pass
    with open_saver(durable_database) as saver:  # second setup: nothing to do
        conn = saver.store.conn
        conn.execute("INSERT INTO cortex_migrations (version, name) VALUES (99, 'from the future')")
        if hasattr(conn, "commit"):
            conn.commit()
    with pytest.raises(StorageError) as caught, open_saver(durable_database):
        pass
    assert caught.value.code == "schema_too_new"
    assert "version 99" in str(caught.value)


def test_view_of_an_unknown_thread(open_db):
    from cortex_agents.persistence import UnknownThread

    with open_db() as saver, pytest.raises(UnknownThread):
        open_view(saver, "missing")
