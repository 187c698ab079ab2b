"""The substrate tables, owned in code, with versioned migrations per dialect.

``cortex_migrations`` records every applied version. :func:`migrate` applies
the missing ones in order, in one transaction, and refuses a database that a
newer cortex-agents already migrated beyond what this code knows.

Tables (v4):

``cortex_branches``
    one row per branch: its thread and namespace, its parent branch and
    the parent seq it continues from (``base_seq``).
``cortex_events``
    one row per event, keyed ``(branch_pk, seq)``; ``body`` is the event's
    compact JSON as text (JSON *text*, so output key order is kept).
``cortex_writers``
    one row per thread ever locked by a writer: its writer ``epoch``, raised
    each time a writer takes the thread's lock. Every commit of a lock holder
    checks it in the same transaction (fencing: see
    :mod:`cortex_agents.persistence._fencing`). Deleting a thread keeps its
    row: a recreated thread must never hand out an epoch a stale writer holds.
``cortex_nodes`` / ``cortex_edges``
    one row per ``node_scheduled`` / ``edge_added`` event, each with a
    foreign key to its event row. A node row is keyed by ``(branch_pk,
    node_id)``: the branch that scheduled it and its id. An edge names each
    endpoint by that key, so the database rejects an edge whose endpoints do
    not exist.

v1 keyed node rows by a surrogate ``node_pk`` (an ``AUTOINCREMENT`` rowid
with a separate unique index on ``(branch_pk, node_id)``). v2 keys them by
what identifies them: a scheduled node costs one row in one B-tree instead
of a row, an index entry and a ``sqlite_sequence`` update — three fewer
pages written per step's commit on SQLite. The v2 migration copies every
node and edge (an edge whose endpoint row is missing fails the migration,
which then changes nothing).

v3 adds an index behind every foreign key a delete checks and no key covers
(an edge's source and target, a branch's parent): without them, deleting a
thread read the whole edge table once per node it deleted. A node row's key
to its event row, ``(branch_pk, seq)``, has none on purpose: a thread's node
rows are deleted before its events, and the node key's ``branch_pk`` prefix
bounds each check to one branch's (by then deleted) rows; an index would
cost a page in every step's commit.

v4 adds ``cortex_writers``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from cortex_agents.errors import StorageError

__all__ = ["LATEST_VERSION", "MIGRATIONS", "Migration", "migrate"]

Dialect = Literal["sqlite", "postgres"]


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema version: its statements per dialect."""

    version: int
    name: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]


def _keyed_nodes(integer: str, options: str) -> tuple[str, ...]:
    """v1 -> v2 in one dialect: ``integer`` is its 64-bit integer type, ``options`` ends a table.

    Edges are copied with LEFT JOINs: an endpoint row that is missing leaves a NULL,
    which the NOT NULL columns refuse (the migration fails, nothing is lost).
    """
    return (
        f"""CREATE TABLE cortex_nodes_v2 (
            branch_pk {integer} NOT NULL,
            node_id TEXT NOT NULL,
            seq {integer} NOT NULL,
            PRIMARY KEY (branch_pk, node_id),
            FOREIGN KEY (branch_pk, seq) REFERENCES cortex_events (branch_pk, seq)
        ){options}""",
        "INSERT INTO cortex_nodes_v2 (branch_pk, node_id, seq) "
        "SELECT branch_pk, node_id, seq FROM cortex_nodes",
        f"""CREATE TABLE cortex_edges_v2 (
            branch_pk {integer} NOT NULL,
            seq {integer} NOT NULL,
            source_branch {integer} NOT NULL,
            source_id TEXT NOT NULL,
            target_branch {integer} NOT NULL,
            target_id TEXT NOT NULL,
            PRIMARY KEY (branch_pk, seq),
            FOREIGN KEY (branch_pk, seq) REFERENCES cortex_events (branch_pk, seq),
            FOREIGN KEY (source_branch, source_id) REFERENCES cortex_nodes_v2 (branch_pk, node_id),
            FOREIGN KEY (target_branch, target_id) REFERENCES cortex_nodes_v2 (branch_pk, node_id)
        ){options}""",
        "INSERT INTO cortex_edges_v2 "
        "(branch_pk, seq, source_branch, source_id, target_branch, target_id) "
        "SELECT e.branch_pk, e.seq, s.branch_pk, s.node_id, t.branch_pk, t.node_id "
        "FROM cortex_edges AS e "
        "LEFT JOIN cortex_nodes AS s ON s.node_pk = e.source_pk "
        "LEFT JOIN cortex_nodes AS t ON t.node_pk = e.target_pk",
        "DROP TABLE cortex_edges",
        "DROP TABLE cortex_nodes",
        "ALTER TABLE cortex_nodes_v2 RENAME TO cortex_nodes",
        "ALTER TABLE cortex_edges_v2 RENAME TO cortex_edges",
    )


# Deleting a row checks every foreign key that points at it. Without an index
# whose leading columns are the referencing ones, each check reads the whole
# referencing table: deleting a thread cost O(its nodes x the database's edges).
_REFERENCE_INDEXES: Final = (
    "CREATE INDEX cortex_edges_by_source ON cortex_edges (source_branch, source_id)",
    "CREATE INDEX cortex_edges_by_target ON cortex_edges (target_branch, target_id)",
    "CREATE INDEX cortex_branches_by_parent ON cortex_branches (parent_pk)",
)

MIGRATIONS: Final[tuple[Migration, ...]] = (
    Migration(
        version=1,
        name="substrate tables",
        sqlite=(
            """CREATE TABLE cortex_branches (
                branch_pk INTEGER PRIMARY KEY AUTOINCREMENT,
                thread_id TEXT NOT NULL,
                checkpoint_ns TEXT NOT NULL,
                parent_pk INTEGER REFERENCES cortex_branches (branch_pk),
                base_seq INTEGER NOT NULL CHECK (base_seq >= 0)
            )""",
            "CREATE INDEX cortex_branches_by_thread ON cortex_branches (thread_id, checkpoint_ns)",
            """CREATE TABLE cortex_events (
                branch_pk INTEGER NOT NULL REFERENCES cortex_branches (branch_pk),
                seq INTEGER NOT NULL CHECK (seq >= 1),
                body TEXT NOT NULL,
                PRIMARY KEY (branch_pk, seq)
            ) WITHOUT ROWID""",
            """CREATE TABLE cortex_nodes (
                node_pk INTEGER PRIMARY KEY AUTOINCREMENT,
                branch_pk INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                node_id TEXT NOT NULL,
                UNIQUE (branch_pk, node_id),
                FOREIGN KEY (branch_pk, seq) REFERENCES cortex_events (branch_pk, seq)
            )""",
            """CREATE TABLE cortex_edges (
                branch_pk INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                source_pk INTEGER NOT NULL REFERENCES cortex_nodes (node_pk),
                target_pk INTEGER NOT NULL REFERENCES cortex_nodes (node_pk),
                PRIMARY KEY (branch_pk, seq),
                FOREIGN KEY (branch_pk, seq) REFERENCES cortex_events (branch_pk, seq)
            ) WITHOUT ROWID""",
        ),
        postgres=(
            """CREATE TABLE cortex_branches (
                branch_pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                thread_id TEXT NOT NULL,
                checkpoint_ns TEXT NOT NULL,
                parent_pk BIGINT REFERENCES cortex_branches (branch_pk),
                base_seq BIGINT NOT NULL CHECK (base_seq >= 0)
            )""",
            "CREATE INDEX cortex_branches_by_thread ON cortex_branches (thread_id, checkpoint_ns)",
            """CREATE TABLE cortex_events (
                branch_pk BIGINT NOT NULL REFERENCES cortex_branches (branch_pk),
                seq BIGINT NOT NULL CHECK (seq >= 1),
                body TEXT NOT NULL,
                PRIMARY KEY (branch_pk, seq)
            )""",
            """CREATE TABLE cortex_nodes (
                node_pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                branch_pk BIGINT NOT NULL,
                seq BIGINT NOT NULL,
                node_id TEXT NOT NULL,
                UNIQUE (branch_pk, node_id),
                FOREIGN KEY (branch_pk, seq) REFERENCES cortex_events (branch_pk, seq)
            )""",
            """CREATE TABLE cortex_edges (
                branch_pk BIGINT NOT NULL,
                seq BIGINT NOT NULL,
                source_pk BIGINT NOT NULL REFERENCES cortex_nodes (node_pk),
                target_pk BIGINT NOT NULL REFERENCES cortex_nodes (node_pk),
                PRIMARY KEY (branch_pk, seq),
                FOREIGN KEY (branch_pk, seq) REFERENCES cortex_events (branch_pk, seq)
            )""",
        ),
    ),
    Migration(
        version=2,
        name="node rows keyed by (branch, node id)",
        sqlite=_keyed_nodes("INTEGER", " WITHOUT ROWID"),
        postgres=(
            *_keyed_nodes("BIGINT", ""),
            # Postgres names a primary key after the table it was created in, and renaming
            # the table keeps that name: these give the keys a freshly created table's names.
            "ALTER TABLE cortex_nodes RENAME CONSTRAINT cortex_nodes_v2_pkey TO cortex_nodes_pkey",
            "ALTER TABLE cortex_edges RENAME CONSTRAINT cortex_edges_v2_pkey TO cortex_edges_pkey",
        ),
    ),
    Migration(
        version=3,
        name="indexes behind the foreign keys deletes check",
        sqlite=_REFERENCE_INDEXES,
        postgres=_REFERENCE_INDEXES,
    ),
    Migration(
        version=4,
        name="writer epochs (fencing)",
        sqlite=(
            """CREATE TABLE cortex_writers (
                thread_id TEXT PRIMARY KEY,
                epoch INTEGER NOT NULL CHECK (epoch >= 1)
            ) WITHOUT ROWID""",
        ),
        postgres=(
            """CREATE TABLE cortex_writers (
                thread_id TEXT PRIMARY KEY,
                epoch BIGINT NOT NULL CHECK (epoch >= 1)
            )""",
        ),
    ),
)

LATEST_VERSION: Final = MIGRATIONS[-1].version


def migrate(
    execute: Callable[[str, Sequence[Any]], Any],
    fetch_versions: Callable[[], list[int]],
    dialect: Dialect,
    migrations: Sequence[Migration] = MIGRATIONS,
) -> list[int]:
    """Apply missing migrations inside the caller's transaction; return the versions applied.

    Args:
        execute: Runs one statement with parameters.
        fetch_versions: Returns the versions recorded in ``cortex_migrations``.
        dialect: Which statements to run.
        migrations: The known migrations, in version order.

    Raises:
        StorageError: the database holds a version this code does not know.
    """
    execute(
        "CREATE TABLE IF NOT EXISTS cortex_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)",
        (),
    )
    applied = set(fetch_versions())
    known = {m.version for m in migrations}
    if unknown := sorted(applied - known):
        raise StorageError(
            "schema_too_new",
            f"the database has cortex schema version {unknown[-1]}, newer than this "
            f"cortex-agents knows ({max(known)}); upgrade cortex-agents",
        )
    done = []
    placeholder = "?" if dialect == "sqlite" else "%s"
    for migration in migrations:
        if migration.version in applied:
            continue
        for statement in getattr(migration, dialect):
            execute(statement, ())
        execute(
            f"INSERT INTO cortex_migrations (version, name) VALUES ({placeholder}, {placeholder})",
            (migration.version, migration.name),
        )
        done.append(migration.version)
    return done
