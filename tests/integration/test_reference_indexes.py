"""Deleting a thread does work in proportion to the thread, not to the database.

A delete checks every foreign key that points at the rows it removes; a key
with no index behind its referencing columns makes each check read the whole
referencing table (schema v2 deleted a thread in O(its nodes x every edge)).
"""

from __future__ import annotations

import sqlite3

from cortex_agents.persistence import SqliteSubstrateStore, open_saver
from cortex_agents.substrate import EdgeAdded, Event, NodeScheduled
from tests.support.helpers import at

# (table, referencing columns) deliberately without an index: a thread's node rows
# go before its event rows, and the node key's branch prefix bounds the check
UNINDEXED = {("cortex_nodes", ("branch_pk", "seq"))}


def chain(n: int) -> list[Event]:
    """n nodes, each depending on the one before (n - 1 edges)."""
    events: list[Event] = []
    for i in range(n):
        events.append(NodeScheduled(node_id=f"n{i}", kind="s", at=at(i)))
        if i:
            events.append(EdgeAdded(source=f"n{i - 1}", target=f"n{i}", at=at(i)))
    return events


def delete_steps(path: str, others: int, nodes: int = 300) -> int:
    """SQLite VM steps (in hundreds) to delete thread t0 from a file holding ``others`` more threads."""
    store = SqliteSubstrateStore(path, synchronous="NORMAL")
    try:
        store.setup()
        for t in range(others + 1):
            store.append(f"t{t}", "", None, chain(nodes))
        ticks = [0]

        def tick() -> int:
            ticks[0] += 1
            return 0  # 0: go on

        store.conn.set_progress_handler(tick, 100)
        store.delete_thread("t0")
        store.conn.set_progress_handler(None, 0)
        counts = store.counts()
        assert counts["nodes"] == others * nodes  # t0's rows went, the others' stayed
        assert counts["edges"] == others * (nodes - 1)
        return ticks[0]
    finally:
        store.close()


def test_deleting_a_thread_costs_the_same_beside_five_times_more_data(tmp_path):
    alone = delete_steps(str(tmp_path / "alone.db"), others=0)
    crowded = delete_steps(str(tmp_path / "crowded.db"), others=5)
    # schema v2: each of t0's 300 node rows read every edge of the file (~6x more here)
    assert alone > 0
    assert crowded <= alone * 1.25, (alone, crowded)


def _sqlite_keys(
    path: str,
) -> tuple[set[tuple[str, tuple[str, ...]]], set[tuple[str, tuple[str, ...]]]]:
    conn = sqlite3.connect(path)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'cortex%'"
            )
        ]
        keys, indexed = set(), set()
        for table in tables:
            by_id: dict[int, list[str]] = {}
            for row in conn.execute(f"PRAGMA foreign_key_list({table})"):
                by_id.setdefault(row[0], []).append(row[3])
            keys |= {(table, tuple(cols)) for cols in by_id.values()}
            for index in conn.execute(f"PRAGMA index_list({table})"):
                cols = [r[2] for r in conn.execute(f"PRAGMA index_info({index[1]})")]
                indexed |= {(table, tuple(cols[:k])) for k in range(1, len(cols) + 1)}
            rowid_key = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[5]]
            indexed.add((table, tuple(rowid_key)))  # an INTEGER PRIMARY KEY is the rowid
        return keys, indexed
    finally:
        conn.close()


def _postgres_keys(
    url: str,
) -> tuple[set[tuple[str, tuple[str, ...]]], set[tuple[str, tuple[str, ...]]]]:
    import psycopg

    with psycopg.connect(url) as conn:
        keys = {
            (table, tuple(cols))
            for table, cols in conn.execute(
                "SELECT c.conrelid::regclass::text, array_agg(a.attname ORDER BY k.i) "
                "FROM pg_constraint c, unnest(c.conkey) WITH ORDINALITY AS k(attnum, i), pg_attribute a "
                "WHERE c.contype = 'f' AND a.attrelid = c.conrelid AND a.attnum = k.attnum "
                "AND c.conrelid::regclass::text LIKE 'cortex%' GROUP BY c.oid, c.conrelid"
            )
        }
        indexed = set()
        for table, cols in conn.execute(
            "SELECT i.indrelid::regclass::text, array_agg(a.attname ORDER BY k.i) "
            "FROM pg_index i, unnest(i.indkey) WITH ORDINALITY AS k(attnum, i), pg_attribute a "
            "WHERE a.attrelid = i.indrelid AND a.attnum = k.attnum "
            "AND i.indrelid::regclass::text LIKE 'cortex%' GROUP BY i.indexrelid, i.indrelid"
        ):
            indexed |= {(table, tuple(cols[:k])) for k in range(1, len(cols) + 1)}
    return keys, indexed


def test_every_foreign_key_but_the_documented_one_has_an_index_behind_it(durable_database):
    with open_saver(durable_database):
        pass  # creates and migrates the schema
    if durable_database.startswith("postgresql://"):
        keys, indexed = _postgres_keys(durable_database)
    else:
        keys, indexed = _sqlite_keys(durable_database)
    assert len(keys) >= 6  # branches' parent, events' branch, nodes' event, edges' event and ends

    def backed(table: str, cols: tuple[str, ...]) -> bool:  # leading columns, in any order
        return any(t == table and set(c) == set(cols) for t, c in indexed)

    unbacked = {key for key in keys if not backed(*key)}
    assert unbacked == UNINDEXED
