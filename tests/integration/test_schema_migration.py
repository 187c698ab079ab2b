"""Schema v1 -> v2: node rows keyed by (branch, node id); every node and edge carried over."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from cortex_agents.errors import StorageError
from cortex_agents.persistence import Cursor, open_saver
from cortex_agents.persistence._schema import LATEST_VERSION, MIGRATIONS, migrate
from cortex_agents.persistence._store import encode_event
from cortex_agents.substrate import EdgeAdded, NodeScheduled, SubstrateLog
from tests.support.helpers import at


class _Raw:
    """A plain connection to the test database, ``?`` placeholders on both dialects."""

    def __init__(self, conn: Any, dialect: str) -> None:
        self.conn, self.dialect = conn, dialect

    def run(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.dialect == "postgres":
            sql = sql.replace("?", "%s")
        cursor = self.conn.execute(sql, params)
        return [tuple(r) for r in cursor.fetchall()] if cursor.description else []


@contextmanager
def raw(database: str) -> Iterator[_Raw]:
    if database.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(database) as conn:  # commits on a clean exit
            yield _Raw(conn, "postgres")
        return
    conn = sqlite3.connect(database)
    conn.execute("PRAGMA foreign_keys=ON")
    try:
        yield _Raw(conn, "sqlite")
        conn.commit()
    finally:
        conn.close()


def _node(node_id: str, minute: int) -> NodeScheduled:
    return NodeScheduled(node_id=node_id, kind="s", at=at(minute))


MAIN = [_node("a", 1), _node("b", 2), EdgeAdded(source="a", target="b", at=at(3))]
# a fork of the main branch after its second event: sees a and b, not the edge a -> b
FORK = [_node("c", 4), EdgeAdded(source="a", target="c", at=at(5))]


def write_v1(db: _Raw, *, dangling: bool = False) -> tuple[int, int]:
    """A v1 database as cortex-agents 0.1 wrote it: a branch, a fork, nodes and edges."""
    v1 = [m for m in MIGRATIONS if m.version == 1]
    migrate(
        db.run,
        lambda: [r[0] for r in db.run("SELECT version FROM cortex_migrations")],
        db.dialect,
        v1,
    )
    branch = "INSERT INTO cortex_branches (thread_id, checkpoint_ns, parent_pk, base_seq) "
    main = db.run(branch + "VALUES ('t', '', NULL, 0) RETURNING branch_pk")[0][0]
    fork = db.run(branch + "VALUES ('t', '', ?, 2) RETURNING branch_pk", (main,))[0][0]
    pks: dict[str, int] = {}
    for pk, events in ((main, MAIN), (fork, FORK)):
        for seq, event in enumerate(events, 1 if pk == main else 3):
            db.run(
                "INSERT INTO cortex_events (branch_pk, seq, body) VALUES (?, ?, ?)",
                (pk, seq, encode_event(event)),
            )
            if isinstance(event, NodeScheduled):
                pks[event.node_id] = db.run(
                    "INSERT INTO cortex_nodes (branch_pk, seq, node_id) VALUES (?, ?, ?) "
                    "RETURNING node_pk",
                    (pk, seq, event.node_id),
                )[0][0]
            else:
                target = pks[event.target] + (1000 if dangling and pk == fork else 0)
                db.run(
                    "INSERT INTO cortex_edges (branch_pk, seq, source_pk, target_pk) "
                    "VALUES (?, ?, ?, ?)",
                    (pk, seq, pks[event.source], target),
                )
    return main, fork


def test_a_v1_database_keeps_every_node_and_edge_and_goes_on(durable_database):
    with raw(durable_database) as db:
        main, fork = write_v1(db)
    with open_saver(durable_database) as saver:  # migrates
        store = saver.store
        assert store.read("t", "", Cursor(fork, 4)) == SubstrateLog([*MAIN[:2], *FORK])
        assert store.read("t", "", Cursor(main, 3)) == SubstrateLog(MAIN)
        # the fork goes on: an edge from a node of the main branch to one of its own
        store.append("t", "", Cursor(fork, 4), [EdgeAdded(source="b", target="c", at=at(6))])
        with pytest.raises(StorageError) as caught:  # c exists on the fork only
            store.append("t", "", Cursor(main, 3), [EdgeAdded(source="c", target="a", at=at(6))])
        assert caught.value.code == "integrity"
    with raw(durable_database) as db:
        assert [r[0] for r in db.run("SELECT version FROM cortex_migrations ORDER BY version")] == [
            *range(1, LATEST_VERSION + 1)
        ]
        assert db.run(
            "SELECT branch_pk, node_id, seq FROM cortex_nodes ORDER BY branch_pk, seq"
        ) == [
            (main, "a", 1),
            (main, "b", 2),
            (fork, "c", 3),
        ]
        assert db.run(
            "SELECT branch_pk, seq, source_branch, source_id, target_branch, target_id "
            "FROM cortex_edges ORDER BY branch_pk, seq"
        ) == [
            (main, 3, main, "a", main, "b"),
            (fork, 4, main, "a", fork, "c"),
            (fork, 5, main, "b", fork, "c"),
        ]
        if db.dialect == "sqlite":
            assert db.run("PRAGMA foreign_key_check") == []
            names = {r[0] for r in db.run("SELECT name FROM sqlite_schema")}
            assert not {n for n in names if n.endswith("_v2")}
            assert db.run("SELECT name FROM sqlite_sequence WHERE name = 'cortex_nodes'") == []
        else:
            keys = db.run(
                "SELECT conname FROM pg_constraint WHERE contype = 'p' "
                "AND conrelid IN ('cortex_nodes'::regclass, 'cortex_edges'::regclass) ORDER BY 1"
            )
            assert keys == [("cortex_edges_pkey",), ("cortex_nodes_pkey",)]


def test_a_v1_edge_whose_endpoint_row_is_missing_fails_the_migration_and_changes_nothing(
    tmp_path,
):
    database = str(tmp_path / "damaged.db")
    with raw(database) as db:
        db.run("PRAGMA foreign_keys=OFF")  # how a damaged file got its dangling row
        write_v1(db, dangling=True)
    with pytest.raises(StorageError) as caught, open_saver(database):
        pass
    assert caught.value.code == "integrity"
    with raw(database) as db:
        assert db.run("SELECT version FROM cortex_migrations") == [(1,)]
        assert db.run("SELECT source_pk, target_pk FROM cortex_edges ORDER BY seq")[1][1] > 1000
        assert db.run("SELECT COUNT(*) FROM cortex_nodes") == [(3,)]
